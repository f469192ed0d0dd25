//! What the offline simulator says: it recognises each prompt kind by the markers the
//! protocol writes (`engine::protocol`'s constants, case-insensitively, headings on their own
//! line) and answers the way a cooperative model would. Pure functions: the same prompt and
//! seed give the same text.

use crate::engine::protocol::assignments::{END_MARKER, WORKER_MARKER};
use crate::engine::protocol::evaluation::{FAIL, PASS, RATIONALE_LABEL, SCORE_LABEL, parse_evaluator_reply};
use crate::engine::protocol::prompts::{
    ANSWER_HEADING, ANSWER_TO_EVALUATE_HEADING, LAST_EVALUATION_HEADING, ORIGINAL_REQUEST_HEADING,
    PREVIOUS_SYNTHESIS_HEADING, REQUEST_HEADING, SYNTHESIS_TO_EVALUATE_HEADING, WORKER_RESULTS_HEADING,
    WORKERS_HEADING, YOUR_TASK_HEADING, parse_iteration, parse_result_heading, parse_worker_line,
};
use crate::engine::protocol::{Sentinel, dispatch, flow, pipeline, relay};

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
    fn has_heading(&self, heading: &str) -> bool {
        [self.user, self.system]
            .iter()
            .any(|t| heading_index(t, heading).is_some())
    }
    fn contains(&self, literal: &str) -> bool {
        let literal = literal.to_lowercase();
        [self.user, self.system]
            .iter()
            .any(|t| t.to_lowercase().contains(&literal))
    }
    /// The body under `heading`, from the user message first.
    fn section(&self, heading: &str) -> Option<String> {
        section(self.user, heading).or_else(|| section(self.system, heading))
    }
    fn iteration(&self) -> u32 {
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
    } else if super::pipeline::is_supervision(p.user) {
        PromptKind::Supervisor
    } else if super::pipeline::choice(p.user).is_some() {
        PromptKind::PipelineMember
    } else {
        PromptKind::Chat
    }
}

/// The sim's full answer to a prompt.
pub fn answer(p: &SimPrompt, seed: u64) -> String {
    let mut rng = fastrand::Rng::with_seed(seed);
    match classify(p) {
        PromptKind::Evaluator => evaluator(p),
        PromptKind::SingleEvaluator => single_evaluator(p),
        PromptKind::SynthesisSelfEval => synthesis(p, &mut rng, true),
        PromptKind::Synthesis => synthesis(p, &mut rng, false),
        PromptKind::Planning => planning(p, &mut rng),
        PromptKind::Worker => worker(p, &mut rng),
        PromptKind::FollowUp => follow_up(p, &mut rng),
        PromptKind::RelayDriver => relay_driver(p),
        PromptKind::Router => router(p),
        PromptKind::PipelineMember => super::pipeline::text_reply(p.user).unwrap_or_default(),
        PromptKind::Supervisor => pipeline::NO_REDIRECT.to_string(),
        PromptKind::Chat => chat(p, &mut rng),
    }
}

/// The evaluator's score at iteration `n`: 0.60, 0.77, 0.94, then 0.95.
pub fn evaluator_score(n: u32) -> f64 {
    let s = 0.6 + 0.17 * f64::from(n.max(1) - 1);
    (s.min(0.95) * 100.0).round() / 100.0
}

fn evaluator(p: &SimPrompt) -> String {
    let n = p.iteration();
    let score = evaluator_score(n);
    let request = summary(&p.section(REQUEST_HEADING).unwrap_or_default(), 80);
    let (rationale, sentinel) = if score >= 0.9 {
        (
            format!("iteration {n} answers \"{request}\" completely and the worker contributions agree"),
            Sentinel::GroupReflectComplete,
        )
    } else {
        (
            format!(
                "iteration {n} covers the main points of \"{request}\" but needs more concrete detail and one clear recommendation"
            ),
            Sentinel::NeedsIteration,
        )
    };
    format!("{SCORE_LABEL}: {score:.2}\n{RATIONALE_LABEL}: {rationale}.\n{sentinel}\n")
}

fn single_evaluator(p: &SimPrompt) -> String {
    if p.iteration() >= 2 {
        format!("{PASS}\nThe answer now addresses the request directly.\n")
    } else {
        format!("{FAIL}: the answer is too general; add concrete steps and an example.\n")
    }
}

fn synthesis(p: &SimPrompt, rng: &mut fastrand::Rng, self_evaluate: bool) -> String {
    let n = p.iteration();
    let request = summary(&p.section(REQUEST_HEADING).unwrap_or_default(), 100);
    let results = worker_results(&p.section(WORKER_RESULTS_HEADING).unwrap_or_default());
    let mut out = format!("Combined answer, iteration {n}, to \"{request}\".\n\n");
    if results.is_empty() {
        out.push_str("No worker produced a result this round, so this rests on the request alone.\n");
    }
    for r in &results {
        let quote = summary(&first_sentence(&r.body), 140);
        if quote.is_empty() {
            out.push_str(&format!("- {} ({}) returned no text.\n", r.name, r.status));
        } else {
            out.push_str(&format!("- {} ({}): \"{quote}\"\n", r.name, r.status));
        }
    }
    let closing = pick(
        rng,
        &[
            "the contributions fit together into one plan",
            "the strongest points are combined and the overlaps removed",
            "the pieces agree on the direction and differ only in detail",
            "each part covers a different angle of the same answer",
        ],
    );
    out.push_str(&format!("\nTaken together (pass {n}): {closing}.\n"));
    if self_evaluate {
        if n >= 2 {
            out.push_str(&format!("{}\n", Sentinel::GroupReflectComplete));
        } else {
            out.push_str(&format!("{}\n", Sentinel::NeedsIteration));
            out.push_str("Make the recommendations concrete and resolve where the workers differ.\n");
        }
    }
    out
}

fn planning(p: &SimPrompt, rng: &mut fastrand::Rng) -> String {
    let workers = workers(&p.section(WORKERS_HEADING).unwrap_or_default());
    let request = summary(&p.section(REQUEST_HEADING).unwrap_or_default(), 100);
    let is_replan = p.has_heading(PREVIOUS_SYNTHESIS_HEADING) || p.has_heading(LAST_EVALUATION_HEADING);
    if workers.is_empty() {
        return format!("No workers are listed, so I will answer \"{request}\" directly in the synthesis.\n");
    }
    if !is_replan {
        let mut out = format!(
            "Splitting \"{request}\" across {} worker(s), one angle each.\n\n",
            workers.len()
        );
        for w in &workers {
            let task = format!(
                "{} for the request \"{request}\", from your specialization ({}).",
                pick(
                    rng,
                    &[
                        "Work out the key points",
                        "Draft the part you know best",
                        "Analyse the main risks and options",
                        "Propose concrete steps"
                    ]
                ),
                summary(&w.specialization, 80)
            );
            out.push_str(&format!("{WORKER_MARKER}{}\n{task}\n{END_MARKER}\n\n", w.name));
        }
        return out;
    }

    let n = p.iteration();
    let evaluation = parse_evaluator_reply(&p.section(LAST_EVALUATION_HEADING).unwrap_or_default());
    let score = (!evaluation.unparsed).then_some(evaluation.score);
    // With an evaluator, its score ends the cycle (0.94 at iteration 3); this is the fallback.
    if n > 3 || score.is_some_and(|s| s >= 0.9) {
        return "The goal is met: the last synthesis answers the request, so no further assignments are needed.\n"
            .to_string();
    }
    let feedback = match summary(&evaluation.rationale, 160) {
        none if none.is_empty() => "add more concrete detail".to_string(),
        line => line,
    };
    let mut chosen: Vec<&Worker> = workers.iter().filter(|_| rng.bool()).collect();
    if chosen.is_empty() {
        chosen.push(&workers[rng.usize(..workers.len())]);
    }
    let mut out = format!(
        "Iteration {n}: addressing the evaluation with {} of {} worker(s).\n\n",
        chosen.len(),
        workers.len()
    );
    for w in chosen {
        out.push_str(&format!(
            "{WORKER_MARKER}{}\nRevise your part of \"{request}\" to address this feedback: {feedback}\n{END_MARKER}\n\n",
            w.name
        ));
    }
    out
}

fn worker(p: &SimPrompt, rng: &mut fastrand::Rng) -> String {
    let task = summary(&p.section(YOUR_TASK_HEADING).unwrap_or_default(), 160);
    let request = summary(&p.section(ORIGINAL_REQUEST_HEADING).unwrap_or_default(), 100);
    let focus = p
        .system
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| summary(l, 80))
        .unwrap_or_else(|| "the task as assigned".to_string());
    let points = [
        pick(
            rng,
            &[
                "scope it tightly",
                "start from the user's constraints",
                "name the trade-offs",
            ],
        ),
        pick(
            rng,
            &[
                "check it against a concrete example",
                "keep each step testable",
                "prefer the simplest option that works",
            ],
        ),
        pick(
            rng,
            &[
                "state what is left open",
                "flag the main risk",
                "give one clear recommendation",
            ],
        ),
    ];
    format!(
        "Task: {task}\n\nFrom my focus ({focus}), the answer is to {}, then {}, and finally {}. \
         This keeps the work tied to the original request (\"{request}\").\n\n\
         Concretely: the first step sets the boundaries, the second makes the result verifiable, \
         and the third makes the outcome easy to combine with the other workers' parts.\n",
        points[0], points[1], points[2]
    )
}

fn follow_up(p: &SimPrompt, rng: &mut fastrand::Rng) -> String {
    let n = p.iteration();
    let improvement = pick(
        rng,
        &[
            "added concrete steps",
            "tightened the wording",
            "added an example",
            "resolved the open question",
        ],
    );
    if n >= 2 {
        format!(
            "Revised answer (iteration {n}): I {improvement}; the answer is now complete.\n{}\n",
            Sentinel::ReflectionComplete
        )
    } else {
        format!("Revised answer (iteration {n}): I {improvement}, and one more pass will make it complete.\n")
    }
}

/// A flow router's destinations, from its prompt's `Destinations:` line.
pub fn router_destinations(text: &str) -> Vec<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(flow::DESTINATIONS_LINE))
        .map(|l| {
            l.split(',')
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The destination the sim routes `request` to: picked by a hash of the request, so the same
/// request always goes the same way.
pub fn sim_route(request: &str, destinations: &[String]) -> Option<String> {
    let n = destinations.len() as u64;
    (n > 0).then(|| destinations[(stable_hash(&[request]) % n) as usize].clone())
}

/// The request in a router's prompt (before its routing instructions).
pub fn request_before_routing(prompt: &str) -> &str {
    prompt
        .split(&format!("\n{}", flow::ROUTING_HEADING))
        .next()
        .unwrap_or(prompt)
}

/// A router without tools: the `@handoff:` line and a note for the destination.
fn router(p: &SimPrompt) -> String {
    let request = request_before_routing(p.user);
    let Some(to) = sim_route(request, &router_destinations(p.user)) else {
        return format!("I will answer this myself: {}", summary(request, 80));
    };
    format!(
        "This is one for {to}.\n{}{to}\nThe user asks: {}",
        flow::TEXT_ROUTE,
        summary(request, 80)
    )
}

fn chat(p: &SimPrompt, rng: &mut fastrand::Rng) -> String {
    if p.system.to_lowercase().contains("negotiation") {
        return counterparty(p);
    }
    // A flow member's input opens with the request under a heading.
    let user = p
        .user
        .trim_start()
        .strip_prefix(flow::ORIGINAL_REQUEST)
        .map_or(p.user, str::trim_start);
    // A dispatched sub-agent's input ends with its task (or a clarification) under a heading.
    let user = user
        .rsplit_once(&format!("{}\n", dispatch::TASK_HEADING))
        .map_or(user, |(_, task)| task.trim_start());
    let user = match user.trim_start().strip_prefix(dispatch::CLARIFICATION_HEADER) {
        Some(rest) => rest.split_once('\n').map_or(rest, |(_, q)| q.trim_start()),
        None => user,
    };
    // A pipeline member's input carries a context line and the pipeline's instructions.
    let user = if super::pipeline::is_member(p.user) {
        super::pipeline::request_of(user)
    } else {
        user
    };
    let said = summary(user, 80);
    let opener = pick(rng, &["Noted", "Understood", "Got it", "Thanks"]);
    // huddle's block for a dispatched sub-agent is not its role (one without a prompt of its
    // own has only that block).
    let focus = p
        .system
        .lines()
        .map(str::trim)
        .take_while(|l| *l != dispatch::FOCUS_HEADING)
        .find(|l| !l.is_empty())
        .map(|l| summary(l, 80));
    // A session with a role (a broadcast panel member, a step of a sequential chain) answers in
    // that role, and builds on the earlier answers of the round when it is shown them.
    if let Some(focus) = focus {
        let request = summary(user.split("\n## ").next().unwrap_or(user), 80);
        let earlier: Vec<String> = p
            .user
            .lines()
            .filter_map(|l| {
                l.strip_prefix(flow::REPORT_HEADING)
                    .or_else(|| l.strip_prefix(ANSWER_HEADING))
            })
            .map(|l| l.split(" (").next().unwrap_or(l).trim().to_string())
            .collect();
        let building = if earlier.is_empty() {
            "Nobody has answered before me in this round, so I set out the full answer.".to_string()
        } else {
            format!(
                "I build on what {} said before me and keep what holds up.",
                earlier.join(", ")
            )
        };
        let point = pick(
            rng,
            &[
                "name the trade-offs",
                "give one clear recommendation",
                "flag the main risk",
            ],
        );
        return format!(
            "{opener}: \"{request}\". From my role ({focus}) I {point}.\n\n{building}\n\n\
             (Simulated answer from huddle's offline simulator; no model was called.)\n"
        );
    }
    format!(
        "{opener}: \"{said}\". This is huddle's offline simulator (simulated answer, no model was called); \
         configure a real provider in config.yaml for real answers.\n"
    )
}

/// The turn a relay driver drafts: third turn (or the last allowed) closes the relay.
const SIM_RELAY_TURNS: u32 = 3;

/// A relay driver's draft: deterministic from the turn, the objective, the counterpart's last
/// message and a rejection note; from turn 3 (or the last turn allowed) it closes the relay.
fn relay_driver(p: &SimPrompt) -> String {
    let objective = summary(&p.section(relay::OBJECTIVE_HEADING).unwrap_or_default(), 80);
    let (turn, max) = relay::parse_turn_line(p.user).unwrap_or((1, u32::MAX));
    let latest = p.section(relay::LATEST_REPLY_HEADING).map(|t| summary(&t, 60));
    let note = p
        .section(relay::REJECTION_HEADING)
        .map(|t| summary(t.lines().next().unwrap_or(""), 60));
    if turn > SIM_RELAY_TURNS.min(max) {
        return format!(
            "Report: after {} turns toward \"{objective}\" the counterpart's last word was \"{}\". \
             (Simulated by huddle's offline simulator.)\n{}\n",
            turn - 1,
            latest.unwrap_or_default(),
            relay::RELAY_COMPLETE
        );
    }
    let mut text = match (turn, &latest) {
        (1, _) | (_, None) => format!("Hello. On behalf of my user: {objective}. What can you offer?"),
        (_, Some(said)) => {
            format!(
                "You said: \"{said}\". We can offer {} for it; can you meet us there?",
                300 + 50 * turn
            )
        }
    };
    if let Some(note) = note {
        text = format!("(revised: {note}) {text}");
    }
    format!("{text} (Simulated relay draft.)\n")
}

/// The other side of a negotiation (a relay's counterpart): a counter-offer that comes down
/// as the offers it hears go up, deterministic from the message.
fn counterparty(p: &SimPrompt) -> String {
    let offered: Vec<u32> = p
        .user
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .filter(|n| (10..100_000).contains(n))
        .collect();
    let step = (stable_hash(&[p.user]) % 4) as u32 * 10;
    let text = match offered.last() {
        Some(n) => format!(
            "{n} is too low for me. I can do {}, and delivery is included.",
            n + 50 + step
        ),
        None => format!(
            "Thanks for reaching out. My asking price is {}; what do you have in mind?",
            480 + step
        ),
    };
    format!("{text} (Simulated counterparty.)\n")
}

struct Worker {
    name: String,
    specialization: String,
}

/// The workers listed under the planning prompt's heading.
fn workers(section: &str) -> Vec<Worker> {
    section
        .lines()
        .filter_map(parse_worker_line)
        .map(|(name, specialization)| Worker { name, specialization })
        .collect()
}

struct WorkerResult {
    name: String,
    status: String,
    body: String,
}

/// The results under the synthesis prompt's heading, each with the text under it.
fn worker_results(section: &str) -> Vec<WorkerResult> {
    let mut out: Vec<WorkerResult> = Vec::new();
    for line in section.lines() {
        if let Some((name, status)) = parse_result_heading(line) {
            out.push(WorkerResult {
                name: name.trim().to_string(),
                status: status.unwrap_or("done").to_string(),
                body: String::new(),
            });
        } else if let Some(last) = out.last_mut() {
            last.body.push_str(line);
            last.body.push('\n');
        }
    }
    out
}

/// Line index of a heading standing on its own line (case-insensitive, optional trailing `:`).
fn heading_index(text: &str, heading: &str) -> Option<usize> {
    text.lines().position(|l| {
        let l = l.trim().trim_end_matches(':').trim_end();
        l.eq_ignore_ascii_case(heading)
    })
}

/// The lines under a `## ` heading up to the next `## ` heading.
fn section(text: &str, heading: &str) -> Option<String> {
    let start = heading_index(text, heading)?;
    let body: Vec<&str> = text
        .lines()
        .skip(start + 1)
        .take_while(|l| !l.trim_start().starts_with("## "))
        .collect();
    Some(body.join("\n").trim().to_string())
}

fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|&(_, c)| c == '.' || c == '\n')
        .map(|(i, c)| if c == '.' { i + 1 } else { i })
        .unwrap_or(text.len());
    text[..end].trim().to_string()
}

/// The first non-empty line, cut to `max` characters, with quotes softened.
fn summary(text: &str, max: usize) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let line = line.replace('"', "'");
    if line.chars().count() <= max {
        line
    } else {
        let cut: String = line.chars().take(max).collect();
        format!("{}...", cut.trim_end())
    }
}

fn pick<'a>(rng: &mut fastrand::Rng, options: &[&'a str]) -> &'a str {
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
