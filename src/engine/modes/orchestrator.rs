//! Orchestrator, one pass: plan, dispatch, collect, synthesize. A plan naming no worker is the
//! orchestrator answering itself.
//!
//! Resume point: the pass again; a plan on disk is the plan (no new one is asked), the workers
//! that had answered are answered from disk, the others are asked, then the synthesis.

use crate::model::CycleOutcome;

use super::super::events::Phase;
use super::super::protocol::{
    EARLIER_REQUEST_CHARS, EARLIER_REQUESTS_KEPT, EarlierRequests, PlanMode, SynthesisStep, TeamContext,
    kept_plan_request, orchestrator_brief, planning_prompt, synthesis_prompt,
};
use super::super::run::Run;
use super::super::{EngineError, RunReport};
use super::one_pass::{failed_pass, finish, phase, start};

pub(super) async fn run(run: &mut Run<'_>, prompt: String) -> Result<RunReport, EngineError> {
    let Some(orchestrator) = run.team.orchestrator.clone() else {
        return Err(EngineError::NotRunnable {
            group: run.team.name.clone(),
            mode: run.team.mode,
            reason: "it has no orchestrator session".into(),
        });
    };
    start(run);
    phase(run, Phase::Plan);
    let workers = run.team.worker_infos();
    let mut queued = run.take_pending();
    queued.extend(run.control().take_queued());
    // What holds for the whole run is said once, in the orchestrator's system prompt.
    let brief = orchestrator_brief(
        &TeamContext {
            request: &prompt,
            workers: &workers,
            routing_context: run.team.routing_context.as_deref(),
            orchestrator_prompt: run.team.orchestrator_prompt.as_deref(),
        },
        PlanMode::SinglePass,
        false,
    );
    // The requests of the earlier runs the orchestrator's conversation holds (`memory:
    // conversation`; its kept plans say them): the workers' briefs say them too, since their
    // own conversations hold only their tasks.
    let before = run.sent_prompts(&orchestrator, Some(1)).await;
    let mut earlier: Vec<String> = before
        .iter()
        .filter_map(|text| kept_plan_request(text))
        .map(|request| crate::text::cap_chars(request, EARLIER_REQUEST_CHARS))
        .collect();
    let runs_before = earlier.len() as u32;
    earlier.drain(..earlier.len().saturating_sub(EARLIER_REQUESTS_KEPT));
    let earlier = EarlierRequests {
        first_run: runs_before - earlier.len() as u32 + 1,
        requests: &earlier,
    };
    let plan_prompt = planning_prompt(PlanMode::SinglePass, &prompt, &queued);
    let plan = run.step(&orchestrator, plan_prompt, Some(&brief), Some(1)).await;
    if !plan.success {
        // The orchestrator never read the user's messages: keep them for the next run.
        run.restore_pending(queued);
        return Ok(failed_pass(run, &plan, &orchestrator));
    }
    let parsed = run.parse_plan(&plan.text, 1);
    if parsed.assignments.is_empty() {
        // No assignment: the orchestrator answered itself.
        return Ok(finish(
            run,
            CycleOutcome::Completed,
            plan.text.clone(),
            Some(&orchestrator),
        ));
    }
    phase(run, Phase::Dispatch);
    run.announce(&parsed.assignments, 1);
    let results = run.dispatch(&parsed.assignments, &prompt, &earlier, 1).await;
    phase(run, Phase::Collect);
    if run.cancelled() {
        return Ok(finish(
            run,
            CycleOutcome::Cancelled,
            String::new(),
            Some(&orchestrator),
        ));
    }
    phase(run, Phase::Synthesize);
    let step = SynthesisStep {
        request: &prompt,
        iteration: None,
        results: &results,
        earlier: &[],
        self_evaluation: false,
        evidence: &[],
    };
    let synthesis = run
        .step(&orchestrator, synthesis_prompt(&step), Some(&brief), Some(1))
        .await;
    if !synthesis.success {
        return Ok(failed_pass(run, &synthesis, &orchestrator));
    }
    Ok(finish(
        run,
        CycleOutcome::Completed,
        synthesis.text.clone(),
        Some(&orchestrator),
    ))
}
