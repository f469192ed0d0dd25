//! What the offline simulator says: it recognises each prompt kind by the markers the
//! protocol writes (`engine::protocol`'s constants, case-insensitively, headings on their own
//! line) and hands it to the player of its mode, which answers the way a cooperative model
//! would. Pure functions: the same prompt and seed give the same text.

use super::prompt::{SimPrompt, heading_index};
use super::{chat, cycle, flow as router, pipeline as member, relay as driver};
use crate::engine::protocol::assignments::WORKER_MARKER;
use crate::engine::protocol::prompts::{
    ANSWER_TO_EVALUATE_HEADING, LAST_EVALUATION_HEADING, PREVIOUS_SYNTHESIS_HEADING,
    SYNTHESIS_TO_EVALUATE_HEADING, WORKER_RESULTS_HEADING, WORKERS_HEADING, YOUR_TASK_HEADING,
    parse_iteration,
};
use crate::engine::protocol::{Sentinel, flow, pipeline, relay};

/// The prompt kinds of the contract, in the order they are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    Evaluator,
    SingleEvaluator,
    SynthesisSelfEval,
    Synthesis,
    /// Planning, replan or nudge (the orchestrator's assignment prompts).
    Planning,
    Worker,
    FollowUp,
    /// A relay driver drafting its next outbound message.
    RelayDriver,
    /// A flow router without tools: it answers with an `@handoff:` line.
    Router,
    /// A pipeline member: its handoff in the text form, when it hands off.
    PipelineMember,
    /// A pipeline's supervisor: it never redirects.
    Supervisor,
    Chat,
}

pub fn classify(p: &SimPrompt) -> PromptKind {
    if heading_index(p.user, relay::OBJECTIVE_HEADING).is_some() {
        PromptKind::RelayDriver
    } else if p.has_heading(SYNTHESIS_TO_EVALUATE_HEADING) {
        PromptKind::Evaluator
    } else if p.has_heading(ANSWER_TO_EVALUATE_HEADING) {
        PromptKind::SingleEvaluator
    } else if p.has_heading(WORKER_RESULTS_HEADING) && p.contains(Sentinel::NeedsIteration.as_str()) {
        PromptKind::SynthesisSelfEval
    } else if p.has_heading(WORKER_RESULTS_HEADING) {
        PromptKind::Synthesis
    } else if p.has_heading(WORKERS_HEADING)
        && (p.contains(WORKER_MARKER)
            || p.has_heading(PREVIOUS_SYNTHESIS_HEADING)
            || p.has_heading(LAST_EVALUATION_HEADING))
    {
        // A replan without the format reminder is still a replan.
        PromptKind::Planning
    } else if p.has_heading(YOUR_TASK_HEADING) {
        PromptKind::Worker
    } else if p.contains(Sentinel::ReflectionComplete.as_str()) && parse_iteration(p.user).is_some() {
        // The goal and the rules are in the system prompt for the whole reflection; each
        // message (the first one too) says its iteration.
        PromptKind::FollowUp
    } else if p.has_heading(flow::ROUTING_HEADING) {
        PromptKind::Router
    } else if member::is_supervision(p.user) {
        PromptKind::Supervisor
    } else if member::choice(p.user).is_some() {
        PromptKind::PipelineMember
    } else {
        PromptKind::Chat
    }
}

/// The sim's full answer to a prompt.
pub fn answer(p: &SimPrompt, seed: u64) -> String {
    let mut rng = fastrand::Rng::with_seed(seed);
    match classify(p) {
        PromptKind::Evaluator => cycle::evaluator(p),
        PromptKind::SingleEvaluator => cycle::single_evaluator(p),
        PromptKind::SynthesisSelfEval => cycle::synthesis(p, &mut rng, true),
        PromptKind::Synthesis => cycle::synthesis(p, &mut rng, false),
        PromptKind::Planning => cycle::planning(p, &mut rng),
        PromptKind::Worker => cycle::worker(p, &mut rng),
        PromptKind::FollowUp => cycle::follow_up(p, &mut rng),
        PromptKind::RelayDriver => driver::draft(p),
        PromptKind::Router => router::text_reply(p),
        PromptKind::PipelineMember => member::text_reply(p.user).unwrap_or_default(),
        PromptKind::Supervisor => pipeline::NO_REDIRECT.to_string(),
        PromptKind::Chat => chat::answer(p, &mut rng),
    }
}
