//! Prompt builders (SPEC section 3). Every prompt carries the markers below (`## Workers`,
//! `## Request`, `## Your task`, `Iteration: <n> of <max>`, ...) so the offline simulator
//! (`crate::sim`) can tell what it is asked, with these constants and the readers here; the
//! wording around them is ours.

use std::fmt::Write as _;

use super::assignments::{END_MARKER, WORKER_MARKER};
use super::evaluation::{FAIL, PASS, RATIONALE_LABEL, SCORE_LABEL};
use super::sentinels::{Sentinel, sanitize_worker_text, strip_sentinel_lines};
use super::types::{WorkerInfo, WorkerResult, format_duration};

/// The user's request, in the orchestrator's, the synthesis' and the evaluator's prompts.
pub const REQUEST_HEADING: &str = "## Request";
/// The team's workers, one [`worker_line`] each.
pub const WORKERS_HEADING: &str = "## Workers";
/// A replan's previous answer and its evaluation.
pub const PREVIOUS_SYNTHESIS_HEADING: &str = "## Previous synthesis";
pub const LAST_EVALUATION_HEADING: &str = "## Last evaluation";
/// A worker's prompt: the team's request (context), then its own task.
pub const ORIGINAL_REQUEST_HEADING: &str = "## Original request";
pub const YOUR_TASK_HEADING: &str = "## Your task";
/// The synthesis' inputs, one [`result_heading`] each.
pub const WORKER_RESULTS_HEADING: &str = "## Worker results";
/// What a team's evaluator judges.
pub const SYNTHESIS_TO_EVALUATE_HEADING: &str = "## Synthesis to evaluate";
/// What a single agent's evaluator judges.
pub const ANSWER_TO_EVALUATE_HEADING: &str = "## Answer to evaluate";
/// Opens one earlier answer in a sequential prompt: `### <name>` (`### <name> (failed)`).
pub const ANSWER_HEADING: &str = "### ";
/// What the team's iteration_finished hooks said (a test run), given to the evaluator.
pub const CHECKS_HEADING: &str = "## Checks run after this iteration";
/// The cycle's count, on a line of its own: `Iteration: 2 of 5`.
pub const ITERATION_LINE: &str = "Iteration: ";

/// What a worker without a system prompt is told it is.
pub const GENERIC_WORKER_INSTRUCTION: &str =
    "You are a worker agent in a team. Complete the task below thoroughly and report your result.";

/// The team-level inputs of the orchestrator's planning prompts.
#[derive(Debug, Clone, Copy)]
pub struct TeamContext<'a> {
    /// The user's request (the goal of the cycle).
    pub request: &'a str,
    pub workers: &'a [WorkerInfo],
    pub routing_context: Option<&'a str>,
    pub orchestrator_prompt: Option<&'a str>,
    /// User messages queued while a cycle ran, handed over at this planning step.
    pub queued_messages: &'a [String],
}

/// Whether the first plan may answer directly (one pass) or must delegate (reflect cycle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanMode {
    SinglePass,
    Reflect { max_iterations: u32 },
}

/// The last evaluation, as shown to the replanning orchestrator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LastEvaluation<'a> {
    Evaluator { score: f64, rationale: &'a str },
    SelfEvaluation { score: f64, feedback: &'a str },
    None,
}

/// The inputs of a replan (iteration 2+).
#[derive(Debug, Clone, Copy)]
pub struct Replan<'a> {
    pub previous_synthesis: &'a str,
    pub last_evaluation: LastEvaluation<'a>,
    pub iteration: u32,
    pub max_iterations: u32,
}

/// The inputs of one worker's prompt.
#[derive(Debug, Clone, Copy)]
pub struct WorkerTask<'a> {
    pub system_prompt: Option<&'a str>,
    pub shared_context: Option<&'a str>,
    pub request: &'a str,
    pub task: &'a str,
}

fn present(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|t| !t.is_empty())
}

fn section(out: &mut String, heading: &str, body: &str) {
    let _ = write!(out, "\n{heading}\n{}\n", body.trim());
}

fn iteration_line(out: &mut String, iteration: u32, max_iterations: u32) {
    let _ = writeln!(out, "{ITERATION_LINE}{iteration} of {max_iterations}");
}

/// The iteration of the first `Iteration: <n> of <max>` in `text` (anywhere, ignoring case).
pub fn parse_iteration(text: &str) -> Option<u32> {
    let lower = text.to_lowercase();
    let label = ITERATION_LINE.trim_end().to_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(&label) {
        let rest = lower[from + i + label.len()..].trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse::<u32>()
            && rest[digits.len()..].trim_start().starts_with("of")
        {
            return Some(n);
        }
        from += i + 1;
    }
    None
}

/// One worker under [`WORKERS_HEADING`]: ``- `<name>` (model: <slug>): <first line>``.
fn worker_line(out: &mut String, worker: &WorkerInfo) {
    let what = worker
        .specialization_line()
        .unwrap_or_else(|| "general-purpose worker".to_string());
    let _ = writeln!(out, "- `{}` (model: {}): {what}", worker.name, worker.model);
}

/// Reads a [`worker_line`] (a `* ` bullet too): the worker's name and what it does.
pub fn parse_worker_line(line: &str) -> Option<(String, String)> {
    let line = line.trim();
    let rest = line.strip_prefix("- ").or_else(|| line.strip_prefix("* "))?;
    let rest = rest.strip_prefix('`')?;
    let (name, after) = rest.split_once('`')?;
    let specialization = match after.find("):") {
        Some(i) => &after[i + 2..],
        None => after.split_once(':').map(|(_, s)| s).unwrap_or(""),
    };
    let name = name.trim();
    (!name.is_empty()).then(|| (name.to_string(), specialization.trim().to_string()))
}

fn workers_section(out: &mut String, workers: &[WorkerInfo]) {
    let _ = write!(out, "\n{WORKERS_HEADING}\n");
    for worker in workers {
        worker_line(out, worker);
    }
}

fn assignment_format(out: &mut String) {
    let _ = write!(
        out,
        "\n## Assignment format\n\
         Give each task to a worker with a block, using the worker name exactly as listed:\n\n\
         {WORKER_MARKER}<name>\n\
         <task, one or more lines>\n\
         {END_MARKER}\n\n\
         Each task must stand on its own: a worker sees the user's request and its own task, not \
         the other workers' tasks. Text outside the blocks is your commentary.\n",
    );
}

fn orchestrator_preamble(out: &mut String, ctx: &TeamContext<'_>) {
    if let Some(prompt) = present(ctx.orchestrator_prompt) {
        out.push_str(prompt);
        out.push_str("\n\n");
    }
    out.push_str(
        "You are the orchestrator of a team of AI workers. You plan the work, delegate tasks to \
         the workers best suited for them, and later combine their results.\n",
    );
}

fn team_sections(out: &mut String, ctx: &TeamContext<'_>) {
    section(out, REQUEST_HEADING, ctx.request);
    if !ctx.queued_messages.is_empty() {
        out.push_str("\n## Messages from the user\nThe user added these while the team was working; take them into account:\n");
        for message in ctx.queued_messages {
            let _ = writeln!(out, "- {}", message.trim());
        }
    }
    workers_section(out, ctx.workers);
    if let Some(routing) = present(ctx.routing_context) {
        section(out, "## Routing", routing);
    }
}

/// Iteration 1: the orchestrator plans the work.
pub fn planning_prompt(ctx: &TeamContext<'_>, mode: PlanMode) -> String {
    let mut out = String::with_capacity(2048 + ctx.request.len());
    orchestrator_preamble(&mut out, ctx);
    team_sections(&mut out, ctx);
    assignment_format(&mut out);
    out.push_str("\n## What to do\n");
    match mode {
        PlanMode::SinglePass => out.push_str(
            "Split the request into tasks and assign them to the workers who fit them best. If \
             the request is simple enough to answer yourself, name no worker: answer directly, and \
             your reply is the final answer.\n",
        ),
        PlanMode::Reflect { max_iterations } => {
            let _ = writeln!(
                out,
                "This starts a reflect cycle of up to {max_iterations} iterations. You must delegate: \
                 assign at least one task to a worker, even for a simple request. After the workers \
                 answer you will combine their results, the result is evaluated, and you plan again \
                 until the goal is met."
            );
        }
    }
    out
}

/// Iteration 2+: the orchestrator plans again in the light of the last evaluation.
pub fn replan_prompt(ctx: &TeamContext<'_>, replan: &Replan<'_>) -> String {
    let mut out = String::with_capacity(4096 + ctx.request.len() + replan.previous_synthesis.len());
    orchestrator_preamble(&mut out, ctx);
    out.push_str("This is a later iteration of a reflect cycle.\n");
    iteration_line(&mut out, replan.iteration, replan.max_iterations);
    team_sections(&mut out, ctx);
    section(
        &mut out,
        PREVIOUS_SYNTHESIS_HEADING,
        &strip_sentinel_lines(replan.previous_synthesis),
    );
    let _ = write!(out, "\n{LAST_EVALUATION_HEADING}\n");
    match replan.last_evaluation {
        LastEvaluation::Evaluator { score, rationale } => {
            let _ = writeln!(
                out,
                "Score: {score:.2} (from the evaluator)\nRationale: {}",
                rationale.trim()
            );
        }
        LastEvaluation::SelfEvaluation { score, feedback } => {
            let _ = writeln!(
                out,
                "Score: {score:.2} (your own self-evaluation)\nFeedback: {}",
                feedback.trim()
            );
        }
        LastEvaluation::None => out.push_str("No evaluation was recorded for the previous iteration.\n"),
    }
    assignment_format(&mut out);
    out.push_str(
        "\n## What to do\n\
         Plan the next iteration so that it fixes what the evaluation found lacking; assign only \
         the work that is still needed. If the goal is already met, emit no assignment at all and \
         say so in one sentence: emitting no assignment means the goal is met and the cycle ends.\n",
    );
    out
}

/// The one reminder sent when the first plan of a cycle named no worker.
pub fn nudge_prompt(ctx: &TeamContext<'_>) -> String {
    let mut out = String::with_capacity(1024 + ctx.request.len());
    out.push_str(
        "Your previous reply assigned no task to any worker, but this team works by delegation: \
         you must give at least one worker a task. Reply with assignment blocks now.\n",
    );
    section(&mut out, REQUEST_HEADING, ctx.request);
    workers_section(&mut out, ctx.workers);
    assignment_format(&mut out);
    out
}

/// A worker's prompt: its system prompt (or a generic instruction), the team context, the
/// original request as context and its task.
pub fn worker_prompt(task: &WorkerTask<'_>) -> String {
    let mut out = String::with_capacity(1024 + task.request.len() + task.task.len());
    out.push_str(present(task.system_prompt).unwrap_or(GENERIC_WORKER_INSTRUCTION));
    out.push('\n');
    if let Some(shared) = present(task.shared_context) {
        section(&mut out, "## Team context", shared);
    }
    section(
        &mut out,
        ORIGINAL_REQUEST_HEADING,
        &format!(
            "(Context: the request the team as a whole is working on. Do your task, not all of it.)\n\n{}",
            task.request.trim()
        ),
    );
    section(&mut out, YOUR_TASK_HEADING, task.task);
    out
}

/// Where a session with a git worktree works (see [`worktree_note`]).
#[derive(Debug, Clone, Copy)]
pub struct WorktreeNote<'a> {
    /// The directory it works in.
    pub path: &'a std::path::Path,
    pub branch: &'a str,
    pub base_commit: &'a str,
    /// Team members in the same worktree, by session name.
    pub shared_with: &'a [&'a str],
    /// Other members' branches (session name, branch), given to the team's lead.
    pub other_branches: &'a [(&'a str, &'a str)],
}

/// The note added to a session's system prompt when it works in its own git worktree: where,
/// on which branch, that git is safe there and its work should be committed there, who shares
/// it, and (for the lead) the other members' branches.
pub fn worktree_note(note: &WorktreeNote<'_>) -> String {
    let mut out = String::from(
        "## Your workspace
",
    );
    let _ = write!(
        out,
        "You are in your own git worktree at {}, on branch `{}` (started from commit {}). \
         Git is safe to use there: it does not touch the main checkout or anyone else's work. \
         Commit your work there, on that branch, with clear messages; ",
        note.path.display(),
        note.branch,
        note.base_commit.get(..12).unwrap_or(note.base_commit),
    );
    if note.shared_with.is_empty() {
        out.push_str("other members have their own worktrees.\n");
    } else {
        let _ = writeln!(
            out,
            "you share this worktree with {}, so commit often and do not undo their changes.",
            note.shared_with.join(", ")
        );
    }
    if !note.other_branches.is_empty() {
        out.push_str("The other members work on these branches (same repository):\n");
        for (member, branch) in note.other_branches {
            let _ = writeln!(out, "- {member}: `{branch}`");
        }
        out.push_str(
            "You can look at their work with `git log <branch>` or `git diff HEAD...<branch>` and \
             bring it into yours with `git merge <branch>`.\n",
        );
    }
    out
}

/// A session's system prompt with its worktree note added (see
/// [`worktree_note`]): where it works, on which branch, who shares it,
/// and, for a team's lead, the other members' branches. `None` when it has neither.
pub fn system_prompt_with_note(
    org: &crate::model::Organization,
    session: &crate::model::Session,
) -> Option<String> {
    let own = session
        .system_prompt
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let Some(wt) = &session.worktree else {
        return own.map(str::to_string);
    };
    let team = org.sessions_in(&session.group_id);
    let shared_with: Vec<&str> = team
        .iter()
        .filter(|s| s.id != session.id && s.worktree.as_ref().is_some_and(|o| o.path == wt.path))
        .map(|s| s.name.as_str())
        .collect();
    let others: Vec<(&str, &str)> = if session.role == crate::model::Role::Worker {
        Vec::new()
    } else {
        team.iter()
            .filter(|s| s.id != session.id)
            .filter_map(|s| {
                let w = s.worktree.as_ref().filter(|o| o.path != wt.path)?;
                Some((s.name.as_str(), w.branch.as_str()))
            })
            .collect()
    };
    let note = worktree_note(&WorktreeNote {
        path: &wt.working_dir(),
        branch: &wt.branch,
        base_commit: &wt.base_commit,
        shared_with: &shared_with,
        other_branches: &others,
    });
    Some(match own {
        Some(p) => format!("{p}\n\n{note}"),
        None => note,
    })
}

/// Heads one worker's result: `### <name> (<status>, <duration>)`.
fn result_heading(result: &WorkerResult) -> String {
    format!(
        "### {} ({}, {})",
        result.name,
        result.status(),
        format_duration(result.duration)
    )
}

/// Reads a [`result_heading`]: the worker's name and its status (`None` without one).
pub fn parse_result_heading(line: &str) -> Option<(&str, Option<&str>)> {
    let head = line.trim().strip_prefix("### ")?;
    Some(match head.rfind(" (") {
        Some(i) => {
            let inside = head[i + 2..].trim_end_matches(')');
            let status = inside.split(',').next().unwrap_or("").trim();
            (&head[..i], Some(status).filter(|s| !s.is_empty()))
        }
        None => (head, None),
    })
}

fn worker_results(out: &mut String, results: &[WorkerResult]) {
    let _ = write!(out, "\n{WORKER_RESULTS_HEADING}\n");
    for result in results {
        let _ = writeln!(out, "\n{}", result_heading(result));
        let text = sanitize_worker_text(&result.text);
        let text = text.trim();
        if text.is_empty() {
            out.push_str("(no answer)\n");
        } else if result.success {
            let _ = writeln!(out, "{text}");
        } else {
            let _ = writeln!(out, "This worker failed: {text}");
        }
    }
}

const SYNTHESIS_INSTRUCTIONS: &str = "\n## What to write\n\
    Write one combined answer to the request from the results above: merge what agrees, resolve \
    what conflicts, and fill or flag what a failed worker left missing. Write it for the user; do \
    not describe the process.\n";

/// A worker's latest answer from an earlier iteration of a cycle, given to a synthesis whose
/// iteration did not assign that worker (so the answer covers every worker's contribution).
#[derive(Debug, Clone, PartialEq)]
pub struct EarlierResult {
    pub name: String,
    pub iteration: u32,
    pub text: String,
}

/// Characters of an earlier answer given to a synthesis; the rest is cut (and the cut said),
/// so the prompt stays bounded however long the cycle runs.
pub const EARLIER_RESULT_MAX_CHARS: usize = 2_000;

fn earlier_results(out: &mut String, earlier: &[EarlierResult]) {
    if earlier.is_empty() {
        return;
    }
    out.push_str(
        "\n## Earlier contributions\nWorkers not assigned in this iteration, with their latest \
         answer from an earlier one (long answers shortened). Keep what is still relevant.\n",
    );
    for e in earlier {
        let _ = writeln!(out, "\n### {} (iteration {})", e.name, e.iteration);
        let text = sanitize_worker_text(&e.text);
        let text = text.trim();
        match text.char_indices().nth(EARLIER_RESULT_MAX_CHARS) {
            Some((cut, _)) => {
                let _ = writeln!(out, "{}\n[… shortened]", &text[..cut]);
            }
            None => {
                let _ = writeln!(out, "{text}");
            }
        }
    }
}

/// The orchestrator combines the worker results into one answer.
/// A member's prompt with the notes the user left for it (`@member text`) before it.
/// The heading of the notes a user left for a member's next turn, before its prompt.
pub const NOTES_HEADING: &str = "## A note from the user, for you alone\n";

pub fn prompt_with_notes(notes: &[String], prompt: &str) -> String {
    let mut out = String::from(NOTES_HEADING);
    for note in notes {
        let _ = writeln!(out, "- {}", note.trim());
    }
    out.push('\n');
    out.push_str(prompt);
    out
}

pub fn synthesis_prompt(request: &str, results: &[WorkerResult]) -> String {
    cycle_synthesis_prompt(request, results, &[])
}

/// The synthesis of a reflect iteration: this iteration's results, then the latest earlier
/// answer of each worker it did not assign.
pub fn cycle_synthesis_prompt(request: &str, results: &[WorkerResult], earlier: &[EarlierResult]) -> String {
    let mut out =
        String::with_capacity(2048 + request.len() + results.iter().map(|r| r.text.len()).sum::<usize>());
    out.push_str("You are the orchestrator. Your workers have finished their tasks.\n");
    section(&mut out, REQUEST_HEADING, request);
    worker_results(&mut out, results);
    earlier_results(&mut out, earlier);
    out.push_str(SYNTHESIS_INSTRUCTIONS);
    out
}

/// Synthesis plus self-evaluation (a reflect cycle without an evaluator).
pub fn synthesis_self_eval_prompt(
    request: &str,
    results: &[WorkerResult],
    earlier: &[EarlierResult],
    iteration: u32,
    max_iterations: u32,
) -> String {
    let mut out = cycle_synthesis_prompt(request, results, earlier);
    out.push_str("\n## Self-evaluation\n");
    iteration_line(&mut out, iteration, max_iterations);
    let _ = writeln!(
        out,
        "After your answer, judge honestly whether it fully meets the request. Then end with a line \
         containing only {complete} if the goal is met, or a line containing only {needs} followed \
         by a few lines saying what is still missing or wrong (they guide the next iteration).",
        complete = Sentinel::GroupReflectComplete,
        needs = Sentinel::NeedsIteration,
    );
    out
}

/// An independent evaluator scores the synthesis.
pub fn evaluator_prompt(request: &str, synthesis: &str, iteration: u32, max_iterations: u32) -> String {
    let mut out = String::with_capacity(1024 + request.len() + synthesis.len());
    out.push_str("You are an independent evaluator. Judge how well the answer below meets the request.\n");
    iteration_line(&mut out, iteration, max_iterations);
    section(&mut out, REQUEST_HEADING, request);
    section(
        &mut out,
        SYNTHESIS_TO_EVALUATE_HEADING,
        &strip_sentinel_lines(synthesis),
    );
    let _ = writeln!(
        out,
        "\n## How to answer\n\
         Reply in exactly this format:\n\n\
         {SCORE_LABEL}: <a number from 0.0 to 1.0>\n\
         {RATIONALE_LABEL}: <what is good, what is missing or wrong>\n\n\
         Then a last line containing only {complete} if the goal is fully met (a score of 0.9 or \
         more), otherwise only {needs}.",
        complete = Sentinel::GroupReflectComplete,
        needs = Sentinel::NeedsIteration,
    );
    out
}

/// `prompt` with what the iteration_finished hooks said (`checks`: each hook's command and
/// output) as its own section, before the instructions on how to answer (a synthesis's
/// self-evaluation, an evaluator's format); unchanged when there is nothing to say.
pub fn with_checks(prompt: String, checks: &str) -> String {
    let checks = checks.trim();
    if checks.is_empty() {
        return prompt;
    }
    let mut block = String::new();
    section(
        &mut block,
        CHECKS_HEADING,
        &format!(
            "The team's own checks ran when the workers were done (their output, e.g. a test run; judge the answer with it):\n\n{checks}"
        ),
    );
    let at = ["\n## How to answer", "\n## Self-evaluation"]
        .iter()
        .filter_map(|h| prompt.find(h))
        .min();
    match at {
        Some(i) => format!("{}{block}{}", &prompt[..i], &prompt[i..]),
        None => prompt + &block,
    }
}

/// Single-agent reflection: asks the session to improve its previous answer.
pub fn reflection_followup_prompt(
    goal: &str,
    iteration: u32,
    max_iterations: u32,
    evaluator_feedback: Option<&str>,
) -> String {
    let mut out = String::with_capacity(1024 + goal.len());
    out.push_str("Review your previous answer against the goal and improve it.\n");
    iteration_line(&mut out, iteration, max_iterations);
    section(&mut out, "## Goal", goal);
    if let Some(feedback) = present(evaluator_feedback) {
        section(&mut out, "## Evaluator feedback", feedback);
    }
    let _ = writeln!(
        out,
        "\nWrite the complete improved answer. When the answer fully meets the goal and nothing is \
         left to improve, put {} on a line of its own at the end.",
        Sentinel::ReflectionComplete
    );
    out
}

/// Single-agent reflection: an evaluator model answers PASS or FAIL.
pub fn reflection_evaluator_prompt(goal: &str, answer: &str, iteration: u32, max_iterations: u32) -> String {
    let mut out = String::with_capacity(512 + goal.len() + answer.len());
    out.push_str("You are an independent evaluator. Judge whether the answer below fully meets the goal.\n");
    iteration_line(&mut out, iteration, max_iterations);
    section(&mut out, "## Goal", goal);
    section(&mut out, ANSWER_TO_EVALUATE_HEADING, answer);
    let _ = writeln!(
        out,
        "\n## How to answer\n\
         The first line of your reply must be either {PASS} (the goal is fully met) or \
         {FAIL}: <what is wrong or missing> (one line; details may follow on the next lines)."
    );
    out
}

/// Sequential mode: the prompt plus every earlier answer of this round, each labelled with its
/// session name. The first session gets the prompt unchanged.
pub fn sequential_prompt(prompt: &str, earlier: &[WorkerResult]) -> String {
    if earlier.is_empty() {
        return prompt.to_string();
    }
    let mut out =
        String::with_capacity(512 + prompt.len() + earlier.iter().map(|r| r.text.len()).sum::<usize>());
    out.push_str(prompt.trim_end());
    out.push_str("\n\n## Earlier answers in this round\n");
    for answer in earlier {
        if answer.success {
            let _ = writeln!(out, "\n{ANSWER_HEADING}{}\n{}", answer.name, answer.text.trim());
        } else {
            let _ = writeln!(
                out,
                "\n{ANSWER_HEADING}{} (failed)\n{}",
                answer.name,
                answer.text.trim()
            );
        }
    }
    out.push_str(
        "\nThe sessions above answered before you. Give your own answer: build on theirs, correct \
         what is wrong, and add what is missing.\n",
    );
    out
}

#[cfg(test)]
#[path = "prompts_tests.rs"]
mod tests;
