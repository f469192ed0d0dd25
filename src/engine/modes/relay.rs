//! Relay: the driver session drafts each outbound message toward the user's objective; the
//! draft goes to the counterpart (a member of the team, or another group run in its own mode)
//! once the approval mode allows; the answer comes back to the driver as context. One turn is
//! in flight at a time. It ends when the driver writes `[[RELAY_COMPLETE]]`, at `max_turns`,
//! after `max_failures` consecutive failures, or when the user stops it.
//!
//! State (`idle → planning → waiting_local → ready_to_send → waiting_remote →
//! processing_remote → completed | paused | error | stopped`) is persisted on the group and
//! emitted as `relay_state`; every turn leaves a `relay_audit` line in the run file.
//!
//! Resume point: the relay runs again from its objective; the driver's drafts and the
//! counterpart's answers it had are taken from disk, and the user's answers to its drafts
//! (kept in its record, on disk before they are acted on) are given again without asking, so it
//! continues at its state: a draft that was waiting for approval waits again. A counterpart
//! group's interrupted run is resumed with it (the same request).

use std::sync::Arc;
use std::time::Instant;

use crate::model::{
    ApprovalMode, CycleOutcome, DraftAnswer, Mode, RelayMeta, RelayPhase, RelayRecord, RelaySettings, SentAs,
};

use super::super::events::{EventKind, RunKey};
use super::super::run::Run;
use super::super::session::PromptStamp;
use super::super::team::Member;
use super::super::{EngineError, RunOverrides, RunReport, TurnResult, lock};
use super::relay_history::{DriverTurn, Exchange, driver_prompt, fold, split_complete};
use super::relay_review::Review;
use crate::text::secrets::redact_secrets;

/// Where a relay sits in a chain of relays (a relay whose counterpart is a relay group).
#[derive(Debug, Clone, Default)]
pub(crate) struct RelayLink {
    /// Hops of the messages that led to this run (0 for a relay the user started).
    pub hop: u32,
    /// The trace id of the chain, when this run is part of one.
    pub trace_id: Option<String>,
}

/// Who gets the outbound messages.
enum Counterpart {
    Member(Arc<Member>),
    /// Another group, run in its own mode with the message as its prompt.
    Group {
        id: String,
        name: String,
        relay: bool,
    },
}

impl Counterpart {
    fn name(&self) -> &str {
        match self {
            Counterpart::Member(m) => &m.name,
            Counterpart::Group { name, .. } => name,
        }
    }
}

/// How the loop ended.
struct Ending {
    state: RelayPhase,
    outcome: CycleOutcome,
    reason: String,
    failed: Option<String>,
}

/// True when the group was made from a repository's preset (its `.squad/` team).
fn from_repository(run: &Run<'_>, group_id: &str) -> bool {
    run.shared.org.read(|o| {
        o.group(group_id)
            .and_then(|g| g.source_preset.as_deref())
            .is_some_and(|p| p.starts_with("repo:"))
    })
}

pub(super) async fn run(
    run: &mut Run<'_>,
    objective: String,
    overrides: &RunOverrides,
    link: RelayLink,
) -> Result<RunReport, EngineError> {
    let group_id = run.team.group_id.clone();
    let not_runnable = |reason: String| EngineError::NotRunnable {
        group: run.team.name.clone(),
        mode: Mode::Relay,
        reason,
    };
    let mut settings = run
        .shared
        .org
        .read(|o| o.group(&group_id).and_then(|g| g.settings.relay.clone()))
        .ok_or_else(|| not_runnable("it has no `relay:` settings (driver, counterpart)".into()))?;
    if let Some(approval) = overrides.relay_approval {
        settings.approval = approval;
    }
    // The settings name members as the preset did, by their worker names: matched by handle (a
    // second team from the same preset has session names made unique, `…-negotiator-2`, but
    // the same handles); a session name, whole or less the team prefix, is accepted too.
    let slug = run.team.slug();
    let find = |name: &str| {
        let name = name.trim();
        let handle = crate::naming::slug(name);
        let members = &run.team.participants;
        members
            .iter()
            .find(|m| !handle.is_empty() && m.handle == handle)
            .or_else(|| {
                members.iter().find(|m| {
                    m.name.eq_ignore_ascii_case(name)
                        || crate::naming::strip_team_prefix(&m.name, &slug).eq_ignore_ascii_case(name)
                })
            })
    };
    let driver = find(&settings.driver).cloned().ok_or_else(|| {
        not_runnable(format!(
            "its driver `{}` is not one of its sessions",
            settings.driver
        ))
    })?;
    let counterpart = match find(&settings.counterpart) {
        Some(m) if m.id == driver.id => {
            return Err(not_runnable(
                "its counterpart is its driver; a relay cannot talk to itself".into(),
            ));
        }
        Some(m) => Counterpart::Member(Arc::clone(m)),
        // A team made from a repository's `.squad/` talks to its own members only: the
        // repository must not get to drive one of the user's groups.
        None if from_repository(run, &group_id) => {
            return Err(not_runnable(format!(
                "its counterpart `{}` is not one of its members, and a team from a repository's .squad/ may only relay to its own members",
                settings.counterpart
            )));
        }
        None => {
            let group = run.shared.org.read(|o| {
                o.group_by_name(&settings.counterpart)
                    .map(|g| (g.id.clone(), g.name.clone(), g.mode == Mode::Relay))
            });
            match group {
                Some((id, _, _)) if id == group_id => {
                    return Err(not_runnable(
                        "its counterpart is the relay's own group; a relay cannot talk to itself".into(),
                    ));
                }
                Some((id, name, relay)) => Counterpart::Group { id, name, relay },
                None => {
                    return Err(not_runnable(format!(
                        "its counterpart `{}` is neither one of its sessions nor a group",
                        settings.counterpart
                    )));
                }
            }
        }
    };
    let review = Review::new(&settings.review).map_err(not_runnable)?;
    // A resumed relay keeps its trace id and is given the answers it had.
    let trace_id = link.trace_id.clone().unwrap_or_else(|| run.first_run_id());
    let given: std::collections::VecDeque<DraftAnswer> = match &run.resumed {
        Some(_) => run
            .shared
            .org
            .read(|o| o.group(&group_id).and_then(|g| g.state.relay.clone()))
            .map(|r| r.answers.into())
            .unwrap_or_default(),
        None => Default::default(),
    };
    let mut relay = Relay {
        settings,
        review,
        record: RelayRecord {
            objective: objective.clone(),
            state: RelayPhase::Idle,
            turn: 0,
            max_turns: 0,
            approval: ApprovalMode::Manual,
            trace_id: trace_id.clone(),
            consecutive_failures: 0,
            taken_over: false,
            reason: None,
            answers: Vec::new(),
        },
        given,
        hop: link.hop + 1,
        driver,
        counterpart,
        overrides: overrides.clone(),
        final_text: String::new(),
    };
    relay.record.max_turns = relay.settings.max_turns;
    relay.record.approval = relay.settings.approval;
    run.emit(EventKind::CycleStarted {
        mode: Mode::Relay,
        max_iterations: relay.settings.max_turns,
    });
    let ending = if relay.hop > relay.settings.max_hops {
        let why = format!(
            "hop limit: this relay would send messages at hop {} (max_hops {}); refused to avoid a loop",
            relay.hop, relay.settings.max_hops
        );
        Ending {
            state: RelayPhase::Error,
            outcome: CycleOutcome::Completed,
            reason: why.clone(),
            failed: Some(why),
        }
    } else {
        relay.set_state(run, RelayPhase::Planning, None);
        relay.converse(run).await
    };
    relay.record.reason = Some(ending.reason.clone());
    relay.set_state(run, ending.state, Some(ending.reason.clone()));
    let summary = format!(
        "Relay {} after {} turn(s): {}.",
        ending.state, relay.record.turn, ending.reason
    );
    run.note(&relay.driver, &summary);
    let final_text = relay.final_text.clone();
    run.emit(EventKind::CycleFinished {
        outcome: ending.outcome,
        iterations: relay.record.turn,
        max_iterations: relay.record.max_turns,
        mode: Some(Mode::Relay),
        summary: summary.clone(),
    });
    let mut report = run.report(ending.outcome, relay.record.turn, final_text, summary);
    report.failed = ending.failed;
    Ok(report)
}

struct Relay {
    settings: RelaySettings,
    review: Review,
    record: RelayRecord,
    /// The hop count of the messages this relay sends.
    hop: u32,
    driver: Arc<Member>,
    counterpart: Counterpart,
    overrides: RunOverrides,
    /// What the relay reports as its result: the driver's closing message, else the last
    /// answer.
    final_text: String,
    /// The answers the user gave before the run was interrupted, not yet given again.
    given: std::collections::VecDeque<DraftAnswer>,
}

impl Relay {
    /// Persists the state on the group and announces it.
    fn set_state(&mut self, run: &Run<'_>, state: RelayPhase, reason: Option<String>) {
        self.record.state = state;
        self.persist(run);
        run.emit(EventKind::RelayState {
            state,
            turn: self.record.turn,
            max_turns: self.settings.max_turns,
            reason,
        });
    }

    /// Writes the record on the group (the saver takes it to disk).
    fn persist(&self, run: &Run<'_>) {
        let record = self.record.clone();
        let group_id = run.team.group_id.clone();
        run.shared.org.update(|o| {
            if let Some(g) = o.group_mut(&group_id) {
                g.state.relay = Some(record);
            }
        });
    }

    /// The loop: draft, approve, send, hand the answer back; until an ending.
    async fn converse(&mut self, run: &mut Run<'_>) -> Ending {
        let mut history: Vec<Exchange> = Vec::new();
        let mut rejection: Option<String> = None;
        loop {
            if let Some(ending) = self.checkpoint(run).await {
                return ending;
            }
            if self.record.turn >= self.settings.max_turns {
                return Ending {
                    state: RelayPhase::Stopped,
                    outcome: CycleOutcome::MaxIterations,
                    reason: format!("limit reached: max_turns ({})", self.settings.max_turns),
                    failed: None,
                };
            }
            let turn = self.record.turn + 1;
            let draft_started = Instant::now();
            // The outbound message, and how it was approved.
            let (text, sent_as) = if self.record.taken_over {
                self.set_state(
                    run,
                    RelayPhase::ReadyToSend,
                    Some("taken over: write the next message".into()),
                );
                match self.ask_user(run).await {
                    None => return stopped_ending(run),
                    Some(DraftAnswer::Yours(text) | DraftAnswer::Edit(text)) if !text.trim().is_empty() => {
                        (text, SentAs::Yours)
                    }
                    Some(DraftAnswer::HandBack) => {
                        self.take_over(run, false);
                        continue;
                    }
                    Some(_) => continue,
                }
            } else {
                self.set_state(run, RelayPhase::Planning, None);
                let folded = fold(
                    &history,
                    self.settings.max_history_turns,
                    self.settings.max_history_chars,
                );
                let prompt = driver_prompt(&DriverTurn {
                    objective: &self.record.objective,
                    counterpart: self.counterpart.name(),
                    turn,
                    max_turns: self.settings.max_turns,
                    history: &folded,
                    rejection: rejection.as_deref(),
                });
                self.set_state(run, RelayPhase::WaitingLocal, None);
                let driver = self.driver.clone();
                let result = run.turn_with(&driver, prompt, true, None).await;
                if result.cancelled() || run.cancelled() {
                    return stopped_ending(run);
                }
                let (draft, complete) = split_complete(&result.text);
                if !result.success || (draft.trim().is_empty() && !complete) {
                    let why = result
                        .error
                        .clone()
                        .unwrap_or_else(|| "the driver wrote nothing".into());
                    self.audit(run, turn, None, draft_started, None, "driver_failed", Some(&why));
                    if let Some(ending) = self.failed(run, &why) {
                        return ending;
                    }
                    continue;
                }
                if complete {
                    self.final_text = if draft.trim().is_empty() {
                        history.last().and_then(|e| e.inbound.clone()).unwrap_or_default()
                    } else {
                        draft
                    };
                    return Ending {
                        state: RelayPhase::Completed,
                        outcome: CycleOutcome::GoalMet,
                        reason: "the driver said the objective is done".into(),
                        failed: None,
                    };
                }
                let waits = self.review.needs_review(self.settings.approval, &draft);
                run.emit(EventKind::RelayDraft {
                    session_id: self.driver.id.clone(),
                    turn,
                    text: draft.clone(),
                    waiting: waits.is_some(),
                    review: waits.clone(),
                });
                if waits.is_none() {
                    (draft, SentAs::AutoSent)
                } else {
                    self.set_state(run, RelayPhase::ReadyToSend, waits);
                    match self.ask_user(run).await {
                        None => return stopped_ending(run),
                        Some(DraftAnswer::Approve) => (draft, SentAs::Approved),
                        Some(DraftAnswer::Edit(text)) if !text.trim().is_empty() => (text, SentAs::Edited),
                        Some(DraftAnswer::Yours(text)) if !text.trim().is_empty() => (text, SentAs::Yours),
                        Some(DraftAnswer::Reject(note)) => {
                            self.audit(run, turn, None, draft_started, None, "rejected", None);
                            rejection = Some(if note.trim().is_empty() {
                                "(no note)".to_string()
                            } else {
                                note
                            });
                            continue;
                        }
                        Some(DraftAnswer::TakeOver) => {
                            self.take_over(run, true);
                            continue;
                        }
                        // An empty edit, or a hand-back with nothing taken over: draft again.
                        Some(_) => continue,
                    }
                }
            };
            rejection = None;
            // A counterpart that redacts what it sends (an A2A agent): the message is shown and
            // recorded as it leaves, not as it was drafted.
            let text = if self.counterpart_redacts(run) {
                redact_secrets(&text)
            } else {
                text
            };
            let draft_ms = draft_started.elapsed();
            // Pause is immediate: nothing is sent while paused.
            if let Some(ending) = self.checkpoint(run).await {
                return ending;
            }
            self.record.turn = turn;
            let meta = RelayMeta {
                trace_id: self.record.trace_id.clone(),
                hop: self.hop,
                turn,
                sent_as: Some(sent_as),
            };
            self.set_state(run, RelayPhase::WaitingRemote, None);
            run.emit(EventKind::RelaySent {
                turn,
                sent_as,
                trace_id: meta.trace_id.clone(),
                hop: meta.hop,
                text: text.clone(),
            });
            let remote_started = Instant::now();
            let answer = self.send(run, text.clone(), meta).await;
            if run.cancelled() {
                history.push(Exchange {
                    turn,
                    outbound: text,
                    sent_as,
                    inbound: None,
                });
                return stopped_ending(run);
            }
            match answer {
                Ok(reply) => {
                    self.set_state(run, RelayPhase::ProcessingRemote, None);
                    self.record.consecutive_failures = 0;
                    run.emit(EventKind::RelayReply {
                        turn,
                        trace_id: self.record.trace_id.clone(),
                        hop: self.hop,
                        text: reply.clone(),
                    });
                    self.audit(
                        run,
                        turn,
                        Some(sent_as),
                        draft_started,
                        Some((draft_ms, remote_started)),
                        "ok",
                        None,
                    );
                    self.final_text = reply.clone();
                    history.push(Exchange {
                        turn,
                        outbound: text,
                        sent_as,
                        inbound: Some(reply),
                    });
                }
                Err(why) => {
                    self.audit(
                        run,
                        turn,
                        Some(sent_as),
                        draft_started,
                        Some((draft_ms, remote_started)),
                        "counterpart_failed",
                        Some(&why),
                    );
                    history.push(Exchange {
                        turn,
                        outbound: text,
                        sent_as,
                        inbound: Some(format!("(no answer: {why})")),
                    });
                    if let Some(ending) = self.failed(run, &why) {
                        return ending;
                    }
                }
            }
        }
    }

    /// Between steps: waits out a pause (state `paused`), ends on a stop.
    async fn checkpoint(&mut self, run: &Run<'_>) -> Option<Ending> {
        if run.cancelled() {
            return Some(stopped_ending(run));
        }
        if *run.control().paused.borrow() {
            let before = self.record.state;
            self.set_state(run, RelayPhase::Paused, Some("paused by you".into()));
            let resumed = run.control().wait_if_paused(run.emitter(), |_| {}).await;
            if resumed.is_none() {
                return Some(stopped_ending(run));
            }
            self.set_state(run, before, None);
        }
        None
    }

    /// Waits for the user's answer (None: the run was stopped). A resumed relay is first given
    /// the answers of its interrupted run, in order. Each answer is on disk (with the relay's
    /// record) before it is acted on.
    async fn ask_user(&mut self, run: &Run<'_>) -> Option<DraftAnswer> {
        if let Some(answer) = self.given.pop_front() {
            self.record.answers.push(answer.clone());
            return Some(answer);
        }
        let answer = self.wait_for_user(run).await?;
        self.record.answers.push(answer.clone());
        self.persist(run);
        if let Err(e) = run.shared.checkpoint().await {
            tracing::error!(error = %e, "cannot save a relay answer");
        }
        Some(answer)
    }

    async fn wait_for_user(&mut self, run: &Run<'_>) -> Option<DraftAnswer> {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        *lock(&run.control().relay_answer) = Some(tx);
        let waiting = self.record.state;
        let mut pause = run.control().paused.subscribe();
        // A pause while the user is asked takes effect at once (shown as paused); an answer
        // given meanwhile is held until the resume: nothing is sent while paused.
        let mut shown_paused = false;
        let mut answer: Option<DraftAnswer> = None;
        let result = loop {
            let paused = *pause.borrow_and_update();
            if paused != shown_paused {
                shown_paused = paused;
                if paused {
                    self.set_state(run, RelayPhase::Paused, Some("paused by you".into()));
                    run.emit(EventKind::CyclePaused);
                } else {
                    self.set_state(run, waiting, None);
                    run.emit(EventKind::CycleResumed);
                }
            }
            if answer.is_some() && !paused {
                break answer;
            }
            tokio::select! {
                _ = run.control().cancel.cancelled() => break None,
                given = &mut rx, if answer.is_none() => match given {
                    Ok(a) => answer = Some(a),
                    Err(_) => break None,
                },
                changed = pause.changed() => {
                    if changed.is_err() {
                        // The run's controls are gone: nothing will resume it.
                        break None;
                    }
                }
            }
        };
        lock(&run.control().relay_answer).take();
        result
    }

    fn take_over(&mut self, run: &Run<'_>, active: bool) {
        self.record.taken_over = active;
        run.emit(EventKind::RelayTakeOver {
            turn: self.record.turn,
            active,
        });
    }

    /// Counts a failure; the ending when there were `max_failures` in a row.
    fn failed(&mut self, run: &Run<'_>, why: &str) -> Option<Ending> {
        self.record.consecutive_failures += 1;
        let n = self.record.consecutive_failures;
        if n < self.settings.max_failures {
            run.emit(EventKind::Warning {
                message: format!(
                    "relay turn failed ({n} of {} in a row): {}",
                    self.settings.max_failures,
                    redact_secrets(why)
                ),
            });
            return None;
        }
        let reason = format!(
            "limit reached: max_failures ({} consecutive failures); last: {}",
            self.settings.max_failures,
            redact_secrets(why)
        );
        Some(Ending {
            state: RelayPhase::Error,
            outcome: CycleOutcome::ErrorBudget,
            reason,
            failed: None,
        })
    }

    /// Sends the message to the counterpart and waits for its answer (or why there is none).
    /// The counterpart is a member whose provider redacts what it sends.
    fn counterpart_redacts(&self, run: &Run<'_>) -> bool {
        let Counterpart::Member(member) = &self.counterpart else {
            return false;
        };
        run.shared
            .profile(&run.team.group_id, Some(&member.id))
            .providers
            .for_slug(&member.model)
            .is_ok_and(|(p, _)| p.capabilities().redacts_what_it_sends)
    }

    async fn send(&self, run: &mut Run<'_>, text: String, meta: RelayMeta) -> Result<String, String> {
        match &self.counterpart {
            Counterpart::Member(member) => {
                // The stored message carries the relay's trace id and hop count.
                let stamp = PromptStamp::new(move |m| m.relay = Some(meta.clone()));
                let result: TurnResult = run.turn_with(member, text, false, Some(stamp)).await;
                if result.success && !result.text.trim().is_empty() {
                    Ok(result.text)
                } else {
                    Err(result
                        .error
                        .unwrap_or_else(|| "the counterpart answered nothing".into()))
                }
            }
            Counterpart::Group { id, name, relay } => {
                let guard = run
                    .shared
                    .register(RunKey::team(id.clone()))
                    .map_err(|e| e.to_string())?;
                // A stop of this relay stops the group's run too.
                let cancel = run.control().cancel.clone();
                let inner = guard.run.control.cancel.clone();
                let watcher = tokio::spawn(async move {
                    cancel.cancelled().await;
                    inner.cancel();
                });
                let link = RelayLink {
                    hop: if *relay { self.hop } else { 0 },
                    trace_id: Some(meta.trace_id.clone()),
                };
                let overrides = RunOverrides {
                    model: self.overrides.model.clone(),
                    ..RunOverrides::default()
                };
                let mut result = Box::pin(super::run_linked(
                    run.shared, &guard.run, id, text, &overrides, false, link,
                ))
                .await;
                watcher.abort();
                guard.cost_into(&mut result);
                // The other team's turns are this run's spending too.
                run.control()
                    .count_spent(guard.run.control.spent(), run.emitter());
                guard.finish_with(&result);
                match result {
                    Ok(report) => {
                        run.usage.add(report.usage);
                        run.simulated |= report.simulated;
                        run.control().count_tokens(report.usage, run.emitter());
                        match report.failed {
                            Some(why) => Err(format!("group `{name}`: {why}")),
                            None if report.final_text.trim().is_empty() => {
                                Err(format!("group `{name}` answered nothing"))
                            }
                            None => Ok(report.final_text),
                        }
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }

    /// One audit line: the turn, how it was approved, timings, status; never message text.
    #[allow(clippy::too_many_arguments)]
    fn audit(
        &self,
        run: &Run<'_>,
        turn: u32,
        sent_as: Option<SentAs>,
        draft_started: Instant,
        remote: Option<(std::time::Duration, Instant)>,
        status: &str,
        failure: Option<&str>,
    ) {
        let (draft_ms, remote_ms) = match remote {
            Some((draft, remote_started)) => (
                draft.as_millis() as u64,
                remote_started.elapsed().as_millis() as u64,
            ),
            None => (draft_started.elapsed().as_millis() as u64, 0),
        };
        run.emit(EventKind::RelayAudit {
            turn,
            approval: self.settings.approval,
            sent_as,
            trace_id: self.record.trace_id.clone(),
            hop: self.hop,
            draft_ms,
            remote_ms,
            status: status.to_string(),
            failure: failure.map(|f| crate::text::first_line(&redact_secrets(f), 200)),
        });
    }
}

fn stopped_ending(run: &Run<'_>) -> Ending {
    // The run budget (time or tokens) stops a run the way the stop key does.
    if let Some(spent) = run.control().budget_exhausted() {
        return Ending {
            state: RelayPhase::Stopped,
            outcome: CycleOutcome::BudgetExhausted,
            reason: format!("limit reached: {spent}"),
            failed: None,
        };
    }
    if let Some(why) = run.control().rate_limited() {
        return Ending {
            state: RelayPhase::Stopped,
            outcome: CycleOutcome::RateLimited,
            reason: format!("rate limited: {why}"),
            failed: None,
        };
    }
    let reason = if run.shared.interrupting() {
        "interrupted (huddle was stopped)"
    } else {
        "stopped by you"
    };
    Ending {
        state: RelayPhase::Stopped,
        outcome: CycleOutcome::Cancelled,
        reason: reason.into(),
        failed: None,
    }
}
