//! The team modes, one file each, and the one place that picks the mode of a run. A new mode
//! is a new file here plus a line in [`run`].

mod broadcast;
mod deliberation;
mod dispatch;
mod dispatch_board;
mod flow;
mod one_pass;
mod orchestrator;
mod orchestrator_reflect;
mod pipeline;
mod relay;
mod relay_history;
mod relay_review;
mod sequential;

use std::sync::Arc;

use crate::model::{CycleOutcome, Mode};

use super::budget::within_time_limit;
use super::run::Run;
use super::team::Team;
use super::{ActiveRun, EngineError, EngineShared, RunOverrides, RunReport};

/// Entry point of every team run: reads the team, checks it can run in its mode, runs it.
pub(crate) async fn run(
    shared: &Arc<EngineShared>,
    active: &ActiveRun,
    group_id: &str,
    prompt: String,
    overrides: &RunOverrides,
    resume: bool,
) -> Result<RunReport, EngineError> {
    run_linked(
        shared,
        active,
        group_id,
        prompt,
        overrides,
        resume,
        relay::RelayLink::default(),
    )
    .await
}

/// A team run that may be a link in a chain of relays (`link` says where).
pub(crate) async fn run_linked(
    shared: &Arc<EngineShared>,
    active: &ActiveRun,
    group_id: &str,
    prompt: String,
    overrides: &RunOverrides,
    resume: bool,
    link: relay::RelayLink,
) -> Result<RunReport, EngineError> {
    let team = Team::read(shared, group_id, overrides)?;
    team.check_runnable()?;
    // The group (e.g. just created by `huddle run --preset`) is on disk before its run is
    // reported.
    if let Err(e) = shared.checkpoint().await {
        return Ok(RunReport {
            outcome: CycleOutcome::SaveFailed,
            iterations: 0,
            final_text: String::new(),
            summary: String::new(),
            usage: Default::default(),
            duration: Default::default(),
            simulated: false,
            failed: Some(e.to_string()),
        });
    }
    let mut budget = team.budget;
    if budget.max_duration_secs.is_none() {
        budget.max_duration_secs = team.mode.spec().default_max_duration_secs;
    }
    active.control.set_budget(budget);
    let mut run = Run::new(shared, active, team);
    let work = async {
        match run.team.mode {
            Mode::Broadcast => broadcast::run(&mut run, prompt).await,
            Mode::Sequential => sequential::run(&mut run, prompt).await,
            Mode::Orchestrator => orchestrator::run(&mut run, prompt).await,
            Mode::OrchestratorReflect => orchestrator_reflect::run(&mut run, prompt, resume).await,
            Mode::Relay => relay::run(&mut run, prompt, overrides, link).await,
            Mode::Flow => flow::run(&mut run, prompt).await,
            Mode::Pipeline => pipeline::run(&mut run, prompt).await,
            Mode::Dispatch => dispatch::run(&mut run, prompt).await,
            Mode::Team => deliberation::run(&mut run, prompt).await,
        }
    };
    within_time_limit(&active.control, &active.emitter, work).await
}
