//! Resuming an interrupted team run (or a session's reflection) from what is on disk.
//!
//! A resumed run is its mode run again on the same request, with one difference: every turn
//! the interrupted run (or an earlier resumption) had *finished* is answered from the
//! transcript instead of the model ([`Replay`]). A turn's prompt and final answer carry their
//! run id in the transcript, and the answer is written before anything reports the turn
//! ended (`TranscriptWriter::append_written`), so what was reported is there. A mode that runs
//! its turns from the same state asks the same prompts in the same order: the finished ones
//! come back at once (the tools lent to them hear their calls again, so a handoff or a
//! broadcast they made counts again) and the model is asked only what never finished. What each
//! mode continues from, and what it keeps besides its turns (a relay's answers to its drafts, a
//! pipeline's state at the start, a deliberation's broadcast log, a dispatch run's sub-agents),
//! is said in its file and in its row's `resume` words.
//!
//! A prompt that was sent but never answered is taken back (a `supersedes` mark) when it is
//! asked again, so a model is not sent it twice.

use std::sync::Arc;

use chrono::Utc;

use crate::model::{CycleOutcome, Message, Mode, OpenRun, SessionId};

use super::events::RunId;
use super::replay::Replay;
use super::run::Resumed;
use super::team::Team;
use super::{ActiveRun, EngineError, EngineShared, RunOverrides, RunReport};

/// Opens the run on its group ([`OpenRun`]). With `resume` (or, for a relay's counterpart
/// group, `nested` and the same request as its open run), the group's open run is continued:
/// its earlier runs' finished turns are read from the transcripts of the team's sessions, a
/// pipeline's state goes back to where the run began, and the sessions read their conversations
/// again (with the marks a resumption writes). The caller writes the group through.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn open(
    shared: &Arc<EngineShared>,
    active: &ActiveRun,
    team: &Team,
    prompt: &str,
    overrides: &RunOverrides,
    resume: bool,
    nested: bool,
) -> Option<Resumed> {
    let run_id = active.run_id();
    let gid = team.group_id.clone();
    let (previous, pipeline_now) = shared.org.read(|o| {
        let g = o.group(&gid);
        (
            g.and_then(|g| g.state.run.clone()),
            g.and_then(|g| g.state.pipeline.clone()),
        )
    });
    let previous = previous
        .filter(|p| p.mode == team.mode && !p.runs.is_empty() && (resume || (nested && p.prompt == prompt)));
    let mut open = match &previous {
        Some(p) => p.clone(),
        None => OpenRun {
            mode: team.mode,
            prompt: prompt.to_string(),
            max_iterations: overrides.max_iterations,
            model: overrides.model.clone(),
            relay_approval: overrides.relay_approval,
            budget: overrides.budget,
            rate_limit_wait_secs: overrides.rate_limit_wait_secs,
            started_at: Some(Utc::now()),
            pipeline_at_start: (team.mode == Mode::Pipeline).then(|| pipeline_now.unwrap_or_default()),
            ..OpenRun::default()
        },
    };
    open.runs.push(run_id);
    open.interrupted_at = None;
    open.reason = None;
    let back_to = previous.as_ref().and_then(|p| p.pipeline_at_start.clone());
    shared.org.update(|o| {
        if let Some(g) = o.group_mut(&gid) {
            g.state.run = Some(open);
            if let Some(state) = back_to {
                g.state.pipeline = Some(state);
            }
        }
    });
    let previous = previous?;
    let mut ids: Vec<SessionId> = Vec::new();
    let members = team
        .orchestrator
        .iter()
        .chain(&team.workers)
        .chain(&team.evaluator)
        .chain(&team.participants);
    for m in members {
        if !ids.contains(&m.id) {
            ids.push(m.id.clone());
        }
    }
    let replay = read(shared, &ids, previous.runs.clone()).await;
    shared.forget_sessions(&ids);
    Some(Resumed {
        open: previous,
        replay: Arc::new(replay),
        announced: Default::default(),
    })
}

/// The finished turns of `runs` in the transcripts of `ids` (read off the runtime's threads,
/// through the writer: lines still queued are in them).
pub(crate) async fn read(shared: &Arc<EngineShared>, ids: &[SessionId], runs: Vec<RunId>) -> Replay {
    let shared = Arc::clone(shared);
    let ids = ids.to_vec();
    let read = tokio::task::spawn_blocking(move || {
        let loaded: Vec<(SessionId, Vec<Message>)> = ids
            .into_iter()
            .map(|id| {
                let messages = match shared.writer.load(&shared.transcripts, &id) {
                    Ok(loaded) => loaded.messages,
                    Err(e) => {
                        tracing::warn!(session = %id, error = %e, "cannot read a transcript to resume from");
                        Vec::new()
                    }
                };
                (id, messages)
            })
            .collect();
        Replay::read(&runs, loaded.iter().map(|(id, m)| (id.clone(), m.as_slice())))
    })
    .await;
    read.unwrap_or_default()
}

/// A run that ended with this result is left open, to be resumed: it was stopped from outside
/// (a signal, a quit), or a limit would not reset within its bound (`rate_limited`).
pub(crate) fn left_open(
    shared: &EngineShared,
    active: &ActiveRun,
    result: &Result<RunReport, EngineError>,
) -> bool {
    let stopped_from_outside = shared.interrupting() || active.control.interrupted();
    let Ok(report) = result else { return false };
    (report.outcome == CycleOutcome::Cancelled && stopped_from_outside)
        || report.outcome == CycleOutcome::RateLimited
}

/// The run ended: its open run goes (on disk before the end is reported), or, left to be
/// resumed, says when and why it was left.
pub(crate) async fn close(
    shared: &Arc<EngineShared>,
    active: &ActiveRun,
    group_id: &str,
    result: &Result<RunReport, EngineError>,
) {
    if left_open(shared, active, result) {
        let reason = active
            .control
            .rate_limited()
            .map(|why| format!("rate limited: {why}"))
            .or_else(|| active.control.interrupt_reason())
            .or_else(|| shared.interrupt_reason());
        let run_id = active.run_id();
        shared.org.update(|o| {
            if let Some(open) = o
                .group_mut(group_id)
                .and_then(|g| g.state.run.as_mut())
                .filter(|r| r.current() == Some(run_id.as_str()))
            {
                open.interrupted_at = Some(Utc::now());
                open.reason = reason;
            }
        });
    } else {
        forget(shared, active, group_id);
    }
    if let Err(e) = shared.checkpoint().await {
        tracing::error!(error = %e, "cannot save the end of a run");
    }
}

/// Removes the run's open run from its group (it ended; nothing to resume).
pub(crate) fn forget(shared: &EngineShared, active: &ActiveRun, group_id: &str) {
    let run_id = active.run_id();
    shared.org.update(|o| {
        if let Some(g) = o.group_mut(group_id)
            && g.state.run.as_ref().and_then(OpenRun::current) == Some(run_id.as_str())
        {
            g.state.run = None;
        }
    });
}
