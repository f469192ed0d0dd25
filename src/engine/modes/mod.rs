//! The team modes, one file each, and the one place that picks the mode of a run
//! ([`run_linked`]).
//!
//! # What a new mode touches
//!
//! Nothing outside these files asks which mode a team is in: a question about a mode (its
//! label, whether an orchestrator leads it, where a queued message goes, which preset keys are
//! its own, ...) is a field of its row in the mode table. Every mode:
//!
//! 1. `src/model/modes.rs`: its `Mode` variant and its row of the table (`spec`); a field of
//!    `ModeSettings` / `ModeState` (and their `from_preset` / `to_preset`) when it keeps
//!    settings or run state on its group.
//! 2. `src/engine/modes/<mode>.rs`: how it runs; it refuses a team it cannot run before
//!    anything happens (what every mode asks is in `Team::check_runnable`).
//! 3. This file: its `mod` line and its arm in [`run_linked`].
//! 4. `presets/<name>.yaml` and its line in `src/presets/builtin.rs`: its built-in team (a test
//!    wants one per mode).
//! 5. `docs/modes.md` (its section) and `docs/presets-and-squad.md` (its built-in's row).
//!
//! When it has them:
//!
//! - Prompts and reply parsing of its own: `src/engine/protocol/<mode>.rs` and its `mod` line.
//! - A way the simulator plays it: `src/sim/<mode>.rs` and its `mod` line in `src/sim/mod.rs`;
//!   its prompts' kind in `src/sim/text.rs`, which hands them to it.
//! - Settings or state of its own: their types, preset checks (its row's `check_preset`) and
//!   summary in `src/model/<mode>.rs` and its `mod` line; its preset keys in
//!   `src/model/preset.rs`.
//! - Events of its own: `src/engine/events.rs`, their words for people in `src/describe/`, and
//!   their place in a run's tree (`src/trace/tree.rs`) to show in `huddle trace`.
//! - State a resumed run needs besides its finished turns (like a pipeline's conversation at
//!   the run's start, a deliberation's broadcast log): a field of `OpenRun`
//!   (`src/model/resume.rs`), saved where the mode's run says and restored in
//!   `src/engine/resume.rs` (`open`).
//! - A view of its own in the cycle panel: `src/tui/<mode>_view.rs` and its `mod` line, its
//!   field, fold and saved state in `src/tui/cycle_view.rs`.
//! - Settings of each member (like a flow's links): a field of `Session`
//!   (`src/model/organization.rs`) and of `Member` (`src/engine/team.rs`).
//! - Options of one run (like a relay's `--approval`): `RunOverrides` (`src/engine/mod.rs`)
//!   and the flag in `src/cli.rs`. Defaults in config.yaml (like dispatch's guardrails):
//!   `src/config.rs`, `EngineOptions` (`src/engine/mod.rs`) and `Team::read`.
//!
//! So a mode built from what exists touches 7 files (4 of them in `src/`); one with its own
//! protocol and sim player 12; one with its own settings, events, view and resume state about
//! 23.

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

use futures::future::BoxFuture;

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
    shared.check_priced(
        &shared.profile(group_id, None),
        &team.name,
        &team.budget,
        &team.models(),
    )?;
    // The run is open on its group (a resumption reads what its interrupted run finished): on
    // disk with the group (e.g. just created by `huddle run --preset`) before it is reported.
    let resumed = super::resume::open(
        shared,
        active,
        &team,
        &prompt,
        overrides,
        resume,
        link.trace_id.is_some(),
    )
    .await;
    if let Err(e) = shared.checkpoint().await {
        super::resume::forget(shared, active, group_id);
        return Ok(RunReport {
            outcome: CycleOutcome::SaveFailed,
            iterations: 0,
            final_text: String::new(),
            summary: String::new(),
            usage: Default::default(),
            cost: crate::model::Cost::default(),
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
    active.control.set_limit_wait(team.rate_limit_wait);
    let mut run = Run::new(shared, active, team);
    run.resumed = resumed;
    // The mode's future on the heap, as large as that mode's own: held in place, every future
    // that awaits a run (the run's, its task's, a front end's) was the largest mode's size
    // again (27 KB, 56 KB for `Engine::run_group`), copied whole each time one was made or moved.
    // A relay's is boxed as its own type: it runs another team's run inside its own, and a
    // `dyn Send` future of it would need its own type to be known `Send` first.
    let mode = run.team.mode;
    let work = async {
        let boxed: BoxFuture<'_, Result<RunReport, EngineError>> = match mode {
            Mode::Relay => return Box::pin(relay::run(&mut run, prompt, overrides, link)).await,
            Mode::Broadcast => Box::pin(broadcast::run(&mut run, prompt)),
            Mode::Sequential => Box::pin(sequential::run(&mut run, prompt)),
            Mode::Orchestrator => Box::pin(orchestrator::run(&mut run, prompt)),
            Mode::OrchestratorReflect => Box::pin(orchestrator_reflect::run(&mut run, prompt, resume)),
            Mode::Flow => Box::pin(flow::run(&mut run, prompt)),
            Mode::Pipeline => Box::pin(pipeline::run(&mut run, prompt)),
            Mode::Dispatch => Box::pin(dispatch::run(&mut run, prompt)),
            Mode::Team => Box::pin(deliberation::run(&mut run, prompt)),
        };
        boxed.await
    };
    let result = within_time_limit(&active.control, &active.emitter, work).await;
    super::resume::close(shared, active, group_id, &result).await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `make` returns, without making one.
    fn size_of_future<F: std::future::Future>(
        _make: impl FnOnce(
            &'static Arc<EngineShared>,
            &'static ActiveRun,
            &'static str,
            String,
            &'static RunOverrides,
            bool,
        ) -> F,
    ) -> usize {
        std::mem::size_of::<F>()
    }

    /// A run's future (allocated and copied whole once a run) holds its mode's on the heap: in
    /// place it was the largest mode's size whatever the mode (27.5 KB, a reflect cycle's).
    #[test]
    fn a_runs_future_holds_its_modes_on_the_heap() {
        let size = size_of_future(run);
        assert!(size <= 8 * 1024, "a run's future is {size} bytes");
    }
}
