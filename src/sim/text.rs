//! What the offline simulator says: it recognises each prompt kind by the markers the
//! protocol writes (`engine::protocol`'s constants, case-insensitively, headings on their own
//! line) and hands it to the player of its mode, which answers the way a cooperative model
//! would. Pure functions: the same prompt and seed give the same text.

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

/// The text the sim reads: the system prompt (if any) and the message being answered.
#[derive(Debug, Clone, Copy)]
pub struct SimPrompt<'a> {
    pub system: &'a str,
    pub user: &'a str,
}

impl SimPrompt<'_> {
    pub(super) fn has_heading(&self, heading: &str) -> bool {
        [self.user, self.system]
            .iter()
            .any(|t| heading_index(t, heading).is_some())
    }
    pub(super) fn contains(&self, literal: &str) -> bool {
        let literal = literal.to_lowercase();
        [self.user, self.system]
            .iter()
            .any(|t| t.to_lowercase().contains(&literal))
    }
    /// The body under `heading`, from the user message first.
    pub(super) fn section(&self, heading: &str) -> Option<String> {
        section(self.user, heading).or_else(|| section(self.system, heading))
    }
    pub(super) fn iteration(&self) -> u32 {
        parse_iteration(self.user)
            .or_else(|| parse_iteration(self.system))
            .unwrap_or(1)
    }
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
    } else if p.contains(Sentinel::ReflectionComplete.as_str()) {
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

/// Line index of a heading standing on its own line (case-insensitive, optional trailing `:`).
pub(super) fn heading_index(text: &str, heading: &str) -> Option<usize> {
    text.lines().position(|l| {
        let l = l.trim().trim_end_matches(':').trim_end();
        l.eq_ignore_ascii_case(heading)
    })
}

/// The lines under a `## ` heading up to the next `## ` heading.
pub(super) fn section(text: &str, heading: &str) -> Option<String> {
    let start = heading_index(text, heading)?;
    let body: Vec<&str> = text
        .lines()
        .skip(start + 1)
        .take_while(|l| !l.trim_start().starts_with("## "))
        .collect();
    Some(body.join("\n").trim().to_string())
}

/// The first non-empty line, cut to `max` characters, with quotes softened.
pub(super) fn summary(text: &str, max: usize) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let line = line.replace('"', "'");
    if line.chars().count() <= max {
        line
    } else {
        let cut: String = line.chars().take(max).collect();
        format!("{}...", cut.trim_end())
    }
}

pub(super) fn pick<'a>(rng: &mut fastrand::Rng, options: &[&'a str]) -> &'a str {
    options[rng.usize(..options.len())]
}

/// A stable 64-bit FNV-1a hash (the sim's seed must not change between runs or versions).
pub fn stable_hash(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}
