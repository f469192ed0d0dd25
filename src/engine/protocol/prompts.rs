//! Prompt builders (SPEC section 3). Every prompt carries the markers below (`## Workers`,
//! `## Request`, `## Your task`, `Iteration: <n> of <max>`, ...) so the offline simulator
//! (`crate::sim`) can tell what it is asked, with these constants and the readers here; the
//! wording around them is ours.
//!
//! Each thing is said once per request (issue 29): what holds for a whole run (who the model
//! is, the request, the team, the formats and rules) is a *brief* added to the system prompt
//! (`orchestrator_brief`, `worker_brief`, `evaluator_brief`, `reflection_brief`); each step's
//! message ([`StepPrompt`]) carries only what is new at that step, and names the shorter form
//! the conversation keeps of it once the step is done (what was asked, not the inputs and
//! instructions around it), so later requests never repeat an earlier step's prompt.

use std::fmt::Write as _;

use super::assignments::{END_MARKER, WORKER_MARKER};
use super::evaluation::{FAIL, PASS, RATIONALE_LABEL, SCORE_LABEL};
use super::sentinels::{Sentinel, sanitize_worker_text, strip_sentinel_lines};
use super::types::{ShownDuration, WorkerInfo, WorkerResult};

/// The user's request, in the orchestrator's, the synthesis' and the evaluator's prompts.
pub const REQUEST_HEADING: &str = "## Request";
/// The team's workers, one [`worker_line`] each.
pub const WORKERS_HEADING: &str = "## Workers";
/// A replan's previous answer and its evaluation.
pub const PREVIOUS_SYNTHESIS_HEADING: &str = "## Previous synthesis";
pub const LAST_EVALUATION_HEADING: &str = "## Last evaluation";
/// Heads the one line per earlier iteration of a cycle's later plans (see [`ledger`]).
pub const EARLIER_ITERATIONS_HEADING: &str = "## Earlier iterations";
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

/// What every step of an orchestrator's run shares, said once in its system prompt (see
/// [`orchestrator_brief`]): the request, the team, the formats and rules.
#[derive(Debug, Clone, Copy)]
pub struct TeamContext<'a> {
    /// The user's request (the goal of the cycle).
    pub request: &'a str,
    pub workers: &'a [WorkerInfo],
    pub routing_context: Option<&'a str>,
    pub orchestrator_prompt: Option<&'a str>,
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
    /// The previous iteration's synthesis, when the orchestrator's conversation does not hold
    /// it (a cycle resumed after a restart); `None` when its own answer just before says it.
    pub previous_synthesis: Option<&'a str>,
    pub last_evaluation: LastEvaluation<'a>,
    pub iteration: u32,
    pub max_iterations: u32,
    /// The cycle's iterations before the previous one, oldest first: one line each in the
    /// plan (see [`ledger`]), however few of their messages the conversation still sends.
    pub earlier: &'a [crate::model::Evaluation],
    /// The oldest iteration whose synthesis the conversation may still send: a
    /// self-evaluation's reasons end its synthesis, so the ledger says them only for older ones.
    pub syntheses_from: u32,
}

/// What a worker is told for a whole run, besides its own system prompt (see
/// [`worker_brief`]).
#[derive(Debug, Clone, Copy)]
pub struct WorkerBrief<'a> {
    /// The worker's own system prompt: without one, it is told what a worker is.
    pub system_prompt: Option<&'a str>,
    pub shared_context: Option<&'a str>,
    pub request: &'a str,
}

/// A message of one step of a run as a turn sends it, and the shorter form the conversation
/// keeps of it for later turns (`None`: the message itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepPrompt {
    pub text: String,
    pub compact: Option<String>,
}

impl StepPrompt {
    /// A message kept as it was sent.
    pub fn plain(text: String) -> StepPrompt {
        StepPrompt { text, compact: None }
    }

    /// What the conversation keeps of it.
    pub fn kept(&self) -> &str {
        self.compact.as_deref().unwrap_or(&self.text)
    }

    /// A message whose conversation keeps `compact` instead.
    pub fn compacted(text: String, compact: String) -> StepPrompt {
        StepPrompt {
            text,
            compact: Some(compact),
        }
    }
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

/// Heads the assignment format in the orchestrator's system prompt.
pub const ASSIGNMENT_FORMAT_HEADING: &str = "## Assignment format";
/// Heads how an orchestrator's run goes (plan, delegate, combine; a cycle's rules).
pub const HOW_IT_GOES_HEADING: &str = "## How the work goes";
/// Heads how results are combined into one answer.
pub const COMBINING_HEADING: &str = "## Combining results";
/// Heads how a reflect cycle without an evaluator judges its own answer.
pub const SELF_EVALUATION_HEADING: &str = "## Self-evaluation";
/// Heads the user's messages handed over at a planning step.
pub const USER_MESSAGES_HEADING: &str = "## Messages from the user";

fn assignment_format(out: &mut String) {
    let _ = write!(
        out,
        "\n{ASSIGNMENT_FORMAT_HEADING}\n\
         Give each task to a worker with a block, using the worker name exactly as listed:\n\n\
         {WORKER_MARKER}<name>\n\
         <task, one or more lines>\n\
         {END_MARKER}\n\n\
         Each task must stand on its own: a worker sees the user's request and its own task, not \
         the other workers' tasks. Text outside the blocks is your commentary.\n",
    );
}

/// The orchestrator's system prompt for a run (added to its own): who it is, the request, the
/// workers, the routing notes, the assignment format, how the run goes, how results are
/// combined and, in a cycle without an evaluator, how it judges its own answer. The same for
/// every step of the run, so that each step's message carries only what is new.
pub fn orchestrator_brief(ctx: &TeamContext<'_>, mode: PlanMode, self_evaluation: bool) -> String {
    let mut out = String::with_capacity(2048 + ctx.request.len());
    if let Some(prompt) = present(ctx.orchestrator_prompt) {
        out.push_str(prompt);
        out.push_str("\n\n");
    }
    out.push_str(
        "You are the orchestrator of a team of AI workers. You plan the work, delegate tasks to \
         the workers best suited for them, and later combine their results.\n",
    );
    // A cycle's request stays in its brief (its window drops the first plan); a single pass
    // says it in its plan (see [`planning_prompt`]), which the conversation keeps.
    if matches!(mode, PlanMode::Reflect { .. }) {
        section(&mut out, REQUEST_HEADING, ctx.request);
    }
    workers_section(&mut out, ctx.workers);
    if let Some(routing) = present(ctx.routing_context) {
        section(&mut out, "## Routing", routing);
    }
    assignment_format(&mut out);
    let _ = write!(out, "\n{HOW_IT_GOES_HEADING}\n");
    match mode {
        PlanMode::SinglePass => out.push_str(
            "Split the request into tasks and assign them to the workers who fit them best. If \
             the request is simple enough to answer yourself, name no worker: answer directly, and \
             your reply is the final answer. Otherwise the workers answer, and you are given their \
             results to combine.\n",
        ),
        PlanMode::Reflect { max_iterations } => {
            let _ = writeln!(
                out,
                "This is a reflect cycle of up to {max_iterations} iterations. In each one you plan, \
                 the workers answer, you combine their results, the result is evaluated, and you \
                 plan again until the goal is met. In the first plan you must delegate: assign at \
                 least one task to a worker, even for a simple request. In a later plan, assign \
                 only the work still needed to fix what the evaluation found lacking; if the goal \
                 is already met, emit no assignment at all and say so in one sentence: emitting no \
                 assignment means the goal is met and the cycle ends."
            );
        }
    }
    let _ = write!(
        out,
        "\n{COMBINING_HEADING}\n\
         Write one combined answer to the request from the workers' results: merge what agrees, \
         resolve what conflicts, and fill or flag what a failed worker left missing. Write it for \
         the user; do not describe the process.\n"
    );
    if self_evaluation {
        let _ = write!(
            out,
            "\n{SELF_EVALUATION_HEADING}\n\
             After each combined answer, judge honestly whether it fully meets the request. Then \
             end with a line containing only {complete} if the goal is met, or a line containing \
             only {needs} followed by a few lines saying what is still missing or wrong (they \
             guide the next iteration).\n",
            complete = Sentinel::GroupReflectComplete,
            needs = Sentinel::NeedsIteration,
        );
    }
    out
}

fn user_messages(out: &mut String, queued: &[String]) {
    if queued.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "\n{USER_MESSAGES_HEADING}\nThe user added these while the team was working; take them \
         into account:\n"
    );
    for message in queued {
        let _ = writeln!(out, "- {}", message.trim());
    }
}

/// Opens a user's message as the conversation keeps it (see [`kept_user_messages`]).
const KEPT_USER_ADDED: &str = "\nThe user added: ";

/// The user's messages as the conversation keeps them: one line each.
fn kept_user_messages(out: &mut String, queued: &[String]) {
    for message in queued {
        let _ = write!(out, "{KEPT_USER_ADDED}{}", message.trim());
    }
}

/// How much of a single pass's request the conversation keeps (in its plan's compact form),
/// so that a later run in the same conversation still knows what was asked.
pub const KEPT_REQUEST_CHARS: usize = 8 * 1024;

/// The first plan of a run (the brief says how): a single pass's request (its brief, the same
/// for every run, does not say it; the conversation keeps it, up to [`KEPT_REQUEST_CHARS`]),
/// the iteration of a cycle and any messages the user sent meanwhile.
pub fn planning_prompt(mode: PlanMode, request: &str, queued: &[String]) -> StepPrompt {
    let mut out = String::new();
    let mut kept = String::new();
    if let PlanMode::Reflect { max_iterations } = mode {
        iteration_line(&mut out, 1, max_iterations);
        let _ = write!(kept, "Iteration 1 of {max_iterations}: the first plan.");
    } else {
        section(&mut out, REQUEST_HEADING, request);
        let _ = write!(
            kept,
            "{KEPT_PLAN}{}",
            crate::text::cap_chars(request.trim(), KEPT_REQUEST_CHARS)
        );
    }
    user_messages(&mut out, queued);
    kept_user_messages(&mut kept, queued);
    out.push_str(match mode {
        PlanMode::SinglePass => "\nPlan the work: assignment blocks, or your direct answer.\n",
        PlanMode::Reflect { .. } => "\nPlan the first iteration: assignment blocks for the workers.\n",
    });
    StepPrompt::compacted(out.trim_start().to_string(), kept)
}

/// The last evaluation as a plan is told it. A self-evaluation's feedback is the orchestrator's
/// own, at the end of the synthesis it wrote just before (or given with it): only its score.
fn evaluation_said(evaluation: &LastEvaluation<'_>) -> String {
    match evaluation {
        LastEvaluation::Evaluator { score, rationale } => format!(
            "Score: {score:.2} (from the evaluator)\nRationale: {}",
            rationale.trim()
        ),
        LastEvaluation::SelfEvaluation { score, .. } => {
            format!("Score: {score:.2} (your own self-evaluation: its reasons end your previous synthesis)")
        }
        LastEvaluation::None => "No evaluation was recorded for the previous iteration.".to_string(),
    }
}

/// What the ledger says of an iteration's reasons: what the cycle keeps of them.
const LEDGER_REASON_CHARS: usize = crate::model::EARLIER_RATIONALE_CHARS;

/// A cycle's earlier iterations, one line each: whom the plan assigned, the score and the first
/// line of its reasons (a self-evaluation's only once its synthesis is no longer sent, from
/// `syntheses_from` on it is). Oldest first.
pub fn ledger(out: &mut String, earlier: &[crate::model::Evaluation], syntheses_from: u32) {
    if earlier.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{EARLIER_ITERATIONS_HEADING}");
    for e in earlier {
        let _ = write!(out, "- Iteration {}", e.iteration);
        if !e.assigned.is_empty() {
            let _ = write!(out, " ({})", e.assigned.join(", "));
        }
        let by = if e.evaluator_model.is_some() {
            "from the evaluator"
        } else {
            "from your self-evaluation"
        };
        let _ = write!(out, ": score {:.2} {by}", e.score);
        let reason = crate::text::first_line(&e.rationale, LEDGER_REASON_CHARS);
        if !reason.is_empty() && (e.evaluator_model.is_some() || e.iteration < syntheses_from) {
            let _ = write!(out, ": {reason}");
        }
        out.push('\n');
    }
}

/// A later plan of a cycle: the iteration, the earlier iterations one line each (see
/// [`ledger`]), the last evaluation, the previous synthesis when the conversation does not hold
/// it, and any messages the user sent meanwhile. The conversation keeps one line: the
/// iteration (the next plan's ledger has the evaluation).
pub fn replan_prompt(replan: &Replan<'_>, queued: &[String]) -> StepPrompt {
    let mut out = String::with_capacity(512 + 128 * replan.earlier.len());
    iteration_line(&mut out, replan.iteration, replan.max_iterations);
    ledger(&mut out, replan.earlier, replan.syntheses_from);
    if let Some(previous) = replan.previous_synthesis {
        section(
            &mut out,
            PREVIOUS_SYNTHESIS_HEADING,
            &strip_sentinel_lines(previous),
        );
    }
    section(
        &mut out,
        LAST_EVALUATION_HEADING,
        &evaluation_said(&replan.last_evaluation),
    );
    user_messages(&mut out, queued);
    let _ = write!(
        out,
        "\nPlan iteration {}: assignment blocks for the work still needed, or none if the goal is met.\n",
        replan.iteration
    );
    let mut kept = format!(
        "Iteration {} of {}: plan again after the evaluation of iteration {}.",
        replan.iteration,
        replan.max_iterations,
        replan.iteration.saturating_sub(1)
    );
    kept_user_messages(&mut kept, queued);
    StepPrompt::compacted(out, kept)
}

/// Heads what a conversation's earlier runs were asked, in the briefs of a later run.
pub const EARLIER_REQUESTS_HEADING: &str = "## Earlier requests";
/// How many earlier runs' requests a later run is told, at most (the newest): as many runs as a
/// cycle's window can still send messages of (a plan and a synthesis each).
pub const EARLIER_REQUESTS_KEPT: usize = 6;
/// How much of each earlier request they are told.
pub const EARLIER_REQUEST_CHARS: usize = 2 * 1024;

/// What the earlier runs of a conversation were asked (`memory: conversation`), oldest first,
/// and the number of the first of them among the conversation's runs (its messages name runs
/// by these numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EarlierRequests<'a> {
    pub requests: &'a [String],
    pub first_run: u32,
}

impl EarlierRequests<'_> {
    /// No earlier run (`memory: run`, or the first run of a conversation).
    pub const NONE: EarlierRequests<'static> = EarlierRequests {
        requests: &[],
        first_run: 1,
    };
}

/// The requests a later run is told of after `goal` was asked: `earlier` and `goal`, the newest
/// [`EARLIER_REQUESTS_KEPT`], each at most [`EARLIER_REQUEST_CHARS`].
pub fn earlier_requests_after(earlier: &[String], goal: &str) -> Vec<String> {
    let mut out: Vec<String> = earlier.to_vec();
    if !goal.trim().is_empty() {
        out.push(crate::text::cap_chars(goal.trim(), EARLIER_REQUEST_CHARS));
    }
    let extra = out.len().saturating_sub(EARLIER_REQUESTS_KEPT);
    out.drain(..extra);
    out
}

/// A brief of a run whose conversation goes on from earlier runs (`memory: conversation`),
/// with what those runs were asked, numbered by run. The brief is the same for every step of
/// the run, so every role (plans, syntheses, the evaluator, the workers, a chat afterwards) is
/// told them once per request, in the prompt's cached prefix, however little of the earlier
/// runs the window still sends.
pub fn with_earlier_requests(mut brief: String, earlier: &EarlierRequests<'_>) -> String {
    if earlier.requests.is_empty() {
        return brief;
    }
    let _ = write!(
        brief,
        "\n{EARLIER_REQUESTS_HEADING}\nThis run goes on from earlier runs of this conversation, \
         which were asked these (by run number, oldest first); the messages from before this run \
         answer them, not this run's request:\n"
    );
    for (n, request) in (earlier.first_run..).zip(earlier.requests) {
        let _ = write!(brief, "\n{n}. {}\n", request.trim());
    }
    brief
}

/// A cycle's step (a plan, a synthesis, an evaluation) in a conversation's run `run`: its kept
/// form names the run (`Run 2, iteration 1 of 8: ...`), so that a later run can tell which
/// request the messages it still sends answer.
pub fn in_run(prompt: StepPrompt, run: u32) -> StepPrompt {
    let compact = prompt.compact.map(|kept| match kept.strip_prefix("Iteration ") {
        Some(rest) => format!("Run {run}, iteration {rest}"),
        None => kept,
    });
    StepPrompt { compact, ..prompt }
}

/// Prefix of a single pass's plan as the conversation keeps it (see [`planning_prompt`]).
const KEPT_PLAN: &str = "The plan for the request: ";

/// The request of a single pass's plan as the conversation keeps it, from `text` (a user
/// message as kept); `None` for any other message.
pub fn kept_plan_request(text: &str) -> Option<&str> {
    let rest = text.strip_prefix(KEPT_PLAN)?;
    let request = rest.split(KEPT_USER_ADDED).next().unwrap_or(rest).trim();
    (!request.is_empty()).then_some(request)
}

/// The iteration of a synthesis' kept message (`Iteration <n>: the results of …`, see
/// [`synthesis_prompt`]) in `text`, a user message as the conversation keeps it.
pub fn kept_synthesis_iteration(text: &str) -> Option<u32> {
    text.lines().find_map(|line| {
        let line = match line.strip_prefix("Run ") {
            Some(numbered) => numbered.split_once(", iteration ")?.1,
            None => line.strip_prefix("Iteration ")?,
        };
        let (n, rest) = line.split_once(':')?;
        rest.starts_with(KEPT_RESULTS).then(|| n.parse().ok()).flatten()
    })
}

/// How a cycle's synthesis' kept message goes on after its iteration.
const KEPT_RESULTS: &str = " the results of ";

/// The one reminder sent when the first plan of a cycle named no worker.
pub fn nudge_prompt() -> StepPrompt {
    StepPrompt::plain(
        "Your previous reply assigned no task to any worker, but this team works by delegation: \
         you must give at least one worker a task. Reply with assignment blocks now, in the \
         assignment format."
            .to_string(),
    )
}

/// A worker's system prompt for a run (added to its own): what a worker is (when it has no
/// system prompt of its own), the team's shared context and the request the team works on.
pub fn worker_brief(brief: &WorkerBrief<'_>) -> String {
    let mut out = String::with_capacity(512 + brief.request.len());
    if present(brief.system_prompt).is_none() {
        out.push_str(GENERIC_WORKER_INSTRUCTION);
        out.push('\n');
    }
    if let Some(shared) = present(brief.shared_context) {
        section(&mut out, "## Team context", shared);
    }
    out.push_str(
        "\nThe team as a whole works on the request below; each message gives you your own task \
         in it. Do your task, not all of it.\n",
    );
    section(&mut out, ORIGINAL_REQUEST_HEADING, brief.request);
    let blank = out.len() - out.trim_start().len();
    out.drain(..blank);
    out
}

/// A worker's task; the conversation keeps the task alone.
pub fn worker_task_prompt(task: &str) -> StepPrompt {
    let task = task.trim();
    StepPrompt::compacted(format!("{YOUR_TASK_HEADING}\n{task}\n"), task.to_string())
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
fn result_heading(out: &mut String, result: &WorkerResult) {
    let _ = writeln!(
        out,
        "\n### {} ({}, {})",
        result.name,
        result.status(),
        ShownDuration(result.duration)
    );
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
        result_heading(out, result);
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

/// Heads the earlier answers of workers a cycle's iteration did not assign.
pub const EARLIER_CONTRIBUTIONS_HEADING: &str = "## Earlier contributions";

fn earlier_results(out: &mut String, earlier: &[EarlierResult]) {
    if earlier.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "\n{EARLIER_CONTRIBUTIONS_HEADING}\nWorkers not assigned in this iteration, with their \
         latest answer from an earlier one (long answers shortened). Keep what is still relevant.\n",
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

/// What a synthesis step is given (the brief says how to combine and, without an evaluator,
/// how to judge the answer).
#[derive(Debug, Clone, Copy)]
pub struct SynthesisStep<'a> {
    /// The user's request (said in the brief; named in the line the conversation keeps).
    pub request: &'a str,
    /// A cycle's iteration and its limit (`None` in a single pass).
    pub iteration: Option<(u32, u32)>,
    pub results: &'a [WorkerResult],
    pub earlier: &'a [EarlierResult],
    /// The answer must end with the self-evaluation's sentinel.
    pub self_evaluation: bool,
    /// More to judge the answer by when it judges itself (empty: none).
    pub evidence: &'a [Evidence],
}

/// The orchestrator combines the workers' results into one answer: this step's results, then
/// the latest earlier answer of each worker it did not assign. The conversation keeps one line
/// naming whose results were given (the answer that follows says what came of them).
pub fn synthesis_prompt(step: &SynthesisStep<'_>) -> StepPrompt {
    let size = step.results.iter().map(|r| r.text.len()).sum::<usize>();
    let mut out = String::with_capacity(512 + size);
    if let Some((iteration, max)) = step.iteration {
        iteration_line(&mut out, iteration, max);
    }
    worker_results(&mut out, step.results);
    earlier_results(&mut out, step.earlier);
    evidence_sections(&mut out, step.evidence);
    out.push_str(if step.self_evaluation {
        "\nCombine these results into one answer, then give your self-evaluation.\n"
    } else {
        "\nCombine these results into one answer.\n"
    });
    let mut whose = String::new();
    for (k, r) in step.results.iter().enumerate() {
        let comma = if k == 0 { "" } else { ", " };
        let _ = write!(whose, "{comma}{} ({})", r.name, r.status());
    }
    if whose.is_empty() {
        whose.push_str("no worker");
    }
    // A cycle's iteration tells its line from the others; a single pass is told apart by its
    // request (the brief of a later run in the same conversation has another one).
    let mut kept = match step.iteration {
        Some((iteration, _)) => format!("Iteration {iteration}:{KEPT_RESULTS}{whose}"),
        None => format!(
            "The results of {whose} for \"{}\"",
            crate::text::first_line(step.request, 100)
        ),
    };
    if !step.earlier.is_empty() {
        let names: Vec<&str> = step.earlier.iter().map(|e| e.name.as_str()).collect();
        let _ = write!(kept, ", with the earlier answers of {}", names.join(", "));
    }
    kept.push_str(" (given then; not repeated here).");
    StepPrompt::compacted(out.trim_start().to_string(), kept)
}

/// Heads how an evaluator answers.
pub const HOW_TO_ANSWER_HEADING: &str = "## How to answer";

/// An independent evaluator's system prompt for a cycle (added to its own): what it judges, the
/// request, and how to answer.
pub fn evaluator_brief(request: &str) -> String {
    let mut out = String::with_capacity(1024 + request.len());
    out.push_str(
        "You are an independent evaluator. Each message gives you a team's answer to the request \
         below; judge how well it meets the request.\n",
    );
    section(&mut out, REQUEST_HEADING, request);
    let _ = write!(
        out,
        "\n{HOW_TO_ANSWER_HEADING}\n\
         Reply in exactly this format:\n\n\
         {SCORE_LABEL}: <a number from 0.0 to 1.0>\n\
         {RATIONALE_LABEL}: <what is good, what is missing or wrong>\n\n\
         Then a last line containing only {complete} if the goal is fully met (a score of 0.9 or \
         more), otherwise only {needs}.\n",
        complete = Sentinel::GroupReflectComplete,
        needs = Sentinel::NeedsIteration,
    );
    out
}

/// Something more whoever judges an iteration is given with what it judges (the output of the
/// team's iteration_finished hooks, e.g. a test run): its own section after the answer, in
/// that step's message only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The section's heading (`## ...`).
    pub heading: String,
    pub body: String,
}

/// What the team's iteration_finished hooks said (`output`: each hook's command and what it
/// printed), as evidence for whoever judges the iteration; `None` when they said nothing.
pub fn checks(output: &str) -> Option<Evidence> {
    let output = output.trim();
    (!output.is_empty()).then(|| Evidence {
        heading: CHECKS_HEADING.to_string(),
        body: format!(
            "The team's own checks ran when the workers were done (their output, e.g. a test run; judge the answer with it):\n\n{output}"
        ),
    })
}

fn evidence_sections(out: &mut String, evidence: &[Evidence]) {
    for e in evidence {
        section(out, &e.heading, &e.body);
    }
}

/// What one evaluation is given.
#[derive(Debug, Clone, Copy)]
pub struct EvaluationStep<'a> {
    pub synthesis: &'a str,
    pub iteration: u32,
    pub max_iterations: u32,
    /// More to judge the answer by, each in its own section (empty: none).
    pub evidence: &'a [Evidence],
}

/// The evaluator scores a synthesis (the brief says the request and the format). The
/// conversation keeps one line: the answer it judged was this iteration's.
pub fn evaluator_prompt(step: &EvaluationStep<'_>) -> StepPrompt {
    let mut out = String::with_capacity(512 + step.synthesis.len());
    iteration_line(&mut out, step.iteration, step.max_iterations);
    section(
        &mut out,
        SYNTHESIS_TO_EVALUATE_HEADING,
        &strip_sentinel_lines(step.synthesis),
    );
    evidence_sections(&mut out, step.evidence);
    out.push_str("\nJudge this answer in the format of your instructions.\n");
    let kept = format!(
        "Iteration {}: the team's answer to judge (given then; not repeated here).",
        step.iteration
    );
    StepPrompt::compacted(out, kept)
}

/// Single-agent reflection's system prompt for the run (added to the session's own): the goal
/// (here, so that every request has it however much of the conversation is sent), how the
/// answer is improved and how the session says it is done.
pub fn reflection_brief(goal: &str) -> String {
    let mut out = format!(
        "## Reflection\n\
         You are improving your answer to the user's request (the goal, below) iteration by \
         iteration. Each time you are asked, review your previous answer against the goal, then \
         write the complete improved answer. When the answer fully meets the goal and nothing is \
         left to improve, put {} on a line of its own at the end.\n",
        Sentinel::ReflectionComplete
    );
    section(&mut out, "## Goal", goal);
    out
}

/// Single-agent reflection's first message (the goal is in the brief): write the answer.
pub fn reflection_first_prompt(max_iterations: u32) -> StepPrompt {
    let mut out = String::with_capacity(128);
    iteration_line(&mut out, 1, max_iterations);
    out.push_str("Write your complete answer to the goal.\n");
    let kept = format!("Iteration 1 of {max_iterations}: answer the goal.");
    StepPrompt::compacted(out, kept)
}

/// Single-agent reflection: asks the session to improve its previous answer (the goal is the
/// conversation's, the rules are in the brief). The conversation keeps one line.
pub fn reflection_followup_prompt(
    iteration: u32,
    max_iterations: u32,
    evaluator_feedback: Option<&str>,
) -> StepPrompt {
    let mut out = String::with_capacity(512);
    iteration_line(&mut out, iteration, max_iterations);
    out.push_str("Review your previous answer against the goal and write the complete improved answer.\n");
    let mut kept = format!("Iteration {iteration} of {max_iterations}: improve the answer");
    if let Some(feedback) = present(evaluator_feedback) {
        section(&mut out, "## Evaluator feedback", feedback);
        let _ = write!(kept, " (the evaluator said: {feedback})");
    }
    kept.push('.');
    StepPrompt::compacted(out, kept)
}

/// Single-agent reflection: an evaluator model answers PASS or FAIL (one request of its own).
pub fn reflection_evaluator_prompt(goal: &str, answer: &str, iteration: u32, max_iterations: u32) -> String {
    let mut out = String::with_capacity(512 + goal.len() + answer.len());
    out.push_str("You are an independent evaluator. Judge whether the answer below fully meets the goal.\n");
    iteration_line(&mut out, iteration, max_iterations);
    section(&mut out, "## Goal", goal);
    section(&mut out, ANSWER_TO_EVALUATE_HEADING, answer);
    let _ = writeln!(
        out,
        "\n{HOW_TO_ANSWER_HEADING}\n\
         The first line of your reply must be either {PASS} (the goal is fully met) or \
         {FAIL}: <what is wrong or missing> (one line; details may follow on the next lines)."
    );
    out
}

/// Heads the answers given before a session's in a sequential round.
pub const EARLIER_ANSWERS_HEADING: &str = "## Earlier answers in this round";

/// Sequential mode: the prompt plus every earlier answer of this round, each labelled with its
/// session name. The first session gets the prompt unchanged; the conversation keeps the
/// prompt alone (the others' answers are theirs).
pub fn sequential_prompt(prompt: &str, earlier: &[WorkerResult]) -> StepPrompt {
    if earlier.is_empty() {
        return StepPrompt::plain(prompt.to_string());
    }
    let mut out =
        String::with_capacity(512 + prompt.len() + earlier.iter().map(|r| r.text.len()).sum::<usize>());
    out.push_str(prompt.trim_end());
    let _ = writeln!(out, "\n\n{EARLIER_ANSWERS_HEADING}");
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
    let names: Vec<&str> = earlier.iter().map(|a| a.name.as_str()).collect();
    let kept = format!(
        "{} (given with the answers of {} before yours)",
        prompt.trim_end(),
        names.join(", ")
    );
    StepPrompt::compacted(out, kept)
}

#[cfg(test)]
#[path = "prompts_tests.rs"]
mod tests;
