//! The text protocol between huddle and its models, as pure functions: reading plans, verdicts
//! and sentinels, detecting stalls, and building every prompt (SPEC sections 3-5). No I/O and no
//! async here; the mode runners and the reflect loop are built on top.

pub mod assignments;
pub mod compaction;
pub mod dispatch;
pub mod evaluation;
pub mod flow;
pub mod names;
pub mod pipeline;
pub mod prompts;
pub mod relay;
pub mod repo_context;
pub mod sentinels;
pub mod stall;
pub mod summary;
pub mod team_talk;
pub mod types;

pub use assignments::{
    Assignment, Dropped, ParsedPlan, PlanFormat, TASK_SEPARATOR, parse_assignments, parse_assignments_for,
};
pub use evaluation::{
    EvaluatorVerdict, PassFail, SelfEvaluation, SelfVerdict, is_reflection_complete, parse_evaluator_reply,
    parse_pass_fail, parse_self_evaluation,
};
pub use names::{FUZZY_MIN_MARGIN, FUZZY_MIN_SIMILARITY, WorkerResolver};
pub use prompts::{
    EARLIER_REQUEST_CHARS, EARLIER_REQUESTS_KEPT, EARLIER_RESULT_MAX_CHARS, EarlierRequests, EarlierResult,
    EvaluationStep, Evidence, LastEvaluation, PlanMode, Replan, StepPrompt, SynthesisStep, TeamContext,
    WorkerBrief, WorktreeNote, checks, earlier_requests_after, evaluator_brief, evaluator_prompt, in_run,
    kept_plan_request, kept_synthesis_iteration, nudge_prompt, orchestrator_brief, planning_prompt,
    prompt_with_notes, reflection_brief, reflection_evaluator_prompt, reflection_first_prompt,
    reflection_followup_prompt, replan_prompt, sequential_prompt, synthesis_prompt, system_prompt_with_note,
    with_earlier_requests, worker_brief, worker_task_prompt, worktree_note,
};
pub use sentinels::{Sentinel, has_sentinel, sanitize_worker_text, strip_sentinel_lines};
pub use stall::{
    AdjustmentInput, StallCheck, StallReason, check_stall, jaccard_similarity, pending_adjustments,
    remember_synthesis, trend, trend_of,
};
pub use summary::{SummaryInput, completion_summary};
pub use types::{WorkerInfo, WorkerResult, format_duration};
