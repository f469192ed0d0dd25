//! How the sim plays modes `orchestrator` and `orchestrator_reflect` (the orchestrator's plans,
//! a worker's task, the synthesis, the evaluator) and a single session's reflection (its
//! follow-up and its evaluator), deterministically from the prompts of `protocol::prompts`:
//! the evaluator's score rises with the iteration (0.60, 0.77, 0.94), so a reflect cycle meets
//! its goal at iteration 3.

use super::prompt::{SimPrompt, pick, summary};
use crate::engine::protocol::Sentinel;
use crate::engine::protocol::assignments::{END_MARKER, WORKER_MARKER};
use crate::engine::protocol::evaluation::{FAIL, PASS, RATIONALE_LABEL, SCORE_LABEL, parse_evaluator_reply};
use crate::engine::protocol::prompts::{
    GENERIC_WORKER_INSTRUCTION, LAST_EVALUATION_HEADING, ORIGINAL_REQUEST_HEADING,
    PREVIOUS_SYNTHESIS_HEADING, REQUEST_HEADING, WORKER_RESULTS_HEADING, WORKERS_HEADING, YOUR_TASK_HEADING,
    parse_result_heading, parse_worker_line,
};

/// The evaluator's score at iteration `n`: 0.60, 0.77, 0.94, then 0.95.
pub fn evaluator_score(n: u32) -> f64 {
    let s = 0.6 + 0.17 * f64::from(n.max(1) - 1);
    (s.min(0.95) * 100.0).round() / 100.0
}

pub(super) fn evaluator(p: &SimPrompt) -> String {
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

pub(super) fn single_evaluator(p: &SimPrompt) -> String {
    if p.iteration() >= 2 {
        format!("{PASS}\nThe answer now addresses the request directly.\n")
    } else {
        format!("{FAIL}: the answer is too general; add concrete steps and an example.\n")
    }
}

pub(super) fn synthesis(p: &SimPrompt, rng: &mut fastrand::Rng, self_evaluate: bool) -> String {
    let n = p.iteration();
    let request = summary(&p.section(REQUEST_HEADING).unwrap_or_default(), 100);
    let results = worker_results(&p.section(WORKER_RESULTS_HEADING).unwrap_or_default());
    // A single pass's request is in its plan (earlier in the conversation, which the sim does
    // not read); a cycle's is in the brief.
    let mut out = if request.is_empty() {
        format!("Combined answer, iteration {n}.\n\n")
    } else {
        format!("Combined answer, iteration {n}, to \"{request}\".\n\n")
    };
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

pub(super) fn planning(p: &SimPrompt, rng: &mut fastrand::Rng) -> String {
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

pub(super) fn worker(p: &SimPrompt, rng: &mut fastrand::Rng) -> String {
    let task = summary(&p.section(YOUR_TASK_HEADING).unwrap_or_default(), 160);
    let request = summary(&p.section(ORIGINAL_REQUEST_HEADING).unwrap_or_default(), 100);
    // The worker's own system prompt opens the system prompt, before the run's brief (whose
    // first line, without one, says what a worker is).
    let focus = p
        .system
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .filter(|l| *l != GENERIC_WORKER_INSTRUCTION && !l.starts_with("## "))
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

pub(super) fn follow_up(p: &SimPrompt, rng: &mut fastrand::Rng) -> String {
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
        // The first message of a reflection asks for the first answer (the goal is in the brief).
        "First answer (iteration 1): a draft; one more pass will make it complete.\n".to_string()
    }
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

fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|&(_, c)| c == '.' || c == '\n')
        .map(|(i, c)| if c == '.' { i + 1 } else { i })
        .unwrap_or(text.len());
    text[..end].trim().to_string()
}
