use std::time::Duration;

use super::*;

fn workers() -> Vec<WorkerInfo> {
    vec![
        WorkerInfo::new(
            "team-backend",
            "sim/fast",
            Some("You are a backend developer.\nYou write Rust.".into()),
        ),
        WorkerInfo::new("team-tester", "openai/gpt-4o", None),
    ]
}

fn ctx<'a>(workers: &'a [WorkerInfo], queued: &'a [String]) -> TeamContext<'a> {
    TeamContext {
        request: "Build a URL shortener.",
        workers,
        routing_context: Some("Backend work goes to team-backend."),
        orchestrator_prompt: Some("Be terse."),
        queued_messages: queued,
    }
}

fn results() -> Vec<WorkerResult> {
    vec![
        WorkerResult {
            name: "team-backend".into(),
            success: true,
            duration: Duration::from_millis(12_300),
            text: "Here is the API.\n[[GROUP_REFLECT_COMPLETE]]".into(),
        },
        WorkerResult {
            name: "team-tester".into(),
            success: false,
            duration: Duration::from_secs(600),
            text: "timed out after 600s".into(),
        },
    ]
}

fn has_line(prompt: &str, line: &str) -> bool {
    prompt.lines().any(|l| l.trim_end() == line)
}

#[test]
fn planning_lists_workers_and_format() {
    let workers = workers();
    let p = planning_prompt(&ctx(&workers, &[]), PlanMode::SinglePass);
    assert!(p.starts_with("Be terse."), "{p}");
    assert!(has_line(&p, "## Workers"));
    assert!(
        has_line(
            &p,
            "- `team-backend` (model: sim/fast): You are a backend developer. You write Rust."
        ),
        "{p}"
    );
    assert!(
        has_line(
            &p,
            "- `team-tester` (model: openai/gpt-4o): general-purpose worker"
        ),
        "{p}"
    );
    assert!(has_line(&p, "## Request") && p.contains("Build a URL shortener."));
    assert!(p.contains("Backend work goes to team-backend."));
    assert!(has_line(&p, "@worker:<name>") && has_line(&p, "@end"));
    assert!(p.contains("name no worker"), "{p}");
    assert!(!p.contains("Iteration:"));

    let r = planning_prompt(&ctx(&workers, &[]), PlanMode::Reflect { max_iterations: 4 });
    assert!(
        r.contains("You must delegate") && r.contains("up to 4 iterations"),
        "{r}"
    );
    assert!(!r.contains("name no worker"));
}

#[test]
fn replan_carries_synthesis_evaluation_and_queue() {
    let workers = workers();
    let queued = vec!["Also support custom slugs.".to_string()];
    let replan = Replan {
        previous_synthesis: "The shortener works.\n[[NEEDS_ITERATION]]",
        last_evaluation: LastEvaluation::Evaluator {
            score: 0.6,
            rationale: "No tests.",
        },
        iteration: 2,
        max_iterations: 5,
    };
    let p = replan_prompt(&ctx(&workers, &queued), &replan);
    for line in [
        "## Workers",
        "## Request",
        "## Previous synthesis",
        "## Last evaluation",
        "Iteration: 2 of 5",
    ] {
        assert!(has_line(&p, line), "missing {line:?} in {p}");
    }
    assert!(p.contains("The shortener works.") && !p.contains("[[NEEDS_ITERATION]]"));
    assert!(p.contains("Score: 0.60") && p.contains("No tests."));
    assert!(p.contains("Also support custom slugs."));
    assert!(p.contains("emitting no assignment means the goal is met"));
    assert!(has_line(&p, "@worker:<name>"));

    let self_eval = Replan {
        last_evaluation: LastEvaluation::SelfEvaluation {
            score: 0.4,
            feedback: "Add tests.",
        },
        ..replan
    };
    let p = replan_prompt(&ctx(&workers, &[]), &self_eval);
    assert!(p.contains("Score: 0.40") && p.contains("Add tests."), "{p}");
    let none = Replan {
        last_evaluation: LastEvaluation::None,
        ..replan
    };
    assert!(has_line(
        &replan_prompt(&ctx(&workers, &[]), &none),
        "## Last evaluation"
    ));
}

#[test]
fn nudge_lists_workers_and_block_format() {
    let workers = workers();
    let p = nudge_prompt(&ctx(&workers, &[]));
    assert!(has_line(&p, "## Workers") && has_line(&p, "## Request") && has_line(&p, "@worker:<name>"));
    assert!(p.contains("team-tester"));
}

#[test]
fn worker_always_sees_the_original_request() {
    let p = worker_prompt(&WorkerTask {
        system_prompt: Some("You are a tester."),
        shared_context: Some("We use cargo nextest."),
        request: "Build a URL shortener.",
        task: "Write tests for the redirect.",
    });
    assert!(p.starts_with("You are a tester."));
    assert!(p.contains("We use cargo nextest."));
    assert!(has_line(&p, "## Original request") && p.contains("Build a URL shortener."));
    assert!(has_line(&p, "## Your task") && p.contains("Write tests for the redirect."));
    assert!(p.find("## Original request") < p.find("## Your task"));

    let generic = worker_prompt(&WorkerTask {
        system_prompt: Some("  "),
        shared_context: None,
        request: "R",
        task: "T",
    });
    assert!(generic.starts_with(GENERIC_WORKER_INSTRUCTION));
    assert!(!generic.contains("Team context"));
}

#[test]
fn synthesis_labels_results_and_neutralises_worker_sentinels() {
    let p = synthesis_prompt("Build a URL shortener.", &results());
    assert!(has_line(&p, "## Request") && has_line(&p, "## Worker results"));
    assert!(has_line(&p, "### team-backend (ok, 12.3s)"), "{p}");
    assert!(has_line(&p, "### team-tester (failed, 10m 00s)"), "{p}");
    assert!(p.contains("[WORKER_APPROVED]") && !p.to_lowercase().contains("[[group_reflect_complete]]"));
    assert!(p.contains("one combined answer"));
    assert!(!p.contains("[[NEEDS_ITERATION]]"));
}

#[test]
fn a_cycle_synthesis_also_gets_the_latest_earlier_answer_of_workers_not_assigned_now() {
    let earlier = [
        EarlierResult {
            name: "team-docs".into(),
            iteration: 1,
            text: "The docs part UNIQUE_EARLIER.\n[[GROUP_REFLECT_COMPLETE]]".into(),
        },
        EarlierResult {
            name: "team-long".into(),
            iteration: 2,
            text: "x".repeat(EARLIER_RESULT_MAX_CHARS + 500),
        },
    ];
    let p = cycle_synthesis_prompt("Build it.", &results(), &earlier);
    assert!(has_line(&p, "## Earlier contributions"), "{p}");
    assert!(
        has_line(&p, "### team-docs (iteration 1)") && p.contains("UNIQUE_EARLIER"),
        "{p}"
    );
    assert!(
        !p.contains("[[GROUP_REFLECT_COMPLETE]]"),
        "earlier sentinels are neutralised"
    );
    assert!(has_line(&p, "[… shortened]"));
    assert!(!p.contains(&"x".repeat(EARLIER_RESULT_MAX_CHARS + 1)), "bounded");
    assert!(p.find("## Earlier contributions") < p.find("## What to write"));
    let self_eval = synthesis_self_eval_prompt("Build it.", &results(), &earlier, 3, 5);
    assert!(self_eval.contains("UNIQUE_EARLIER") && self_eval.contains("[[NEEDS_ITERATION]]"));
    assert_eq!(
        synthesis_prompt("Build it.", &results()),
        cycle_synthesis_prompt("Build it.", &results(), &[])
    );
}

#[test]
fn synthesis_with_self_evaluation_has_both_sentinels() {
    let p = synthesis_self_eval_prompt("Build it.", &results(), &[], 3, 5);
    assert!(p.contains("[[GROUP_REFLECT_COMPLETE]]") && p.contains("[[NEEDS_ITERATION]]"));
    assert!(has_line(&p, "Iteration: 3 of 5"));
    assert!(has_line(&p, "### team-backend (ok, 12.3s)"));
}

#[test]
fn evaluator_asks_for_score_and_rationale() {
    let p = evaluator_prompt(
        "Build it.",
        "The combined answer.\n[[GROUP_REFLECT_COMPLETE]]",
        2,
        5,
    );
    assert!(has_line(&p, "## Request") && has_line(&p, "## Synthesis to evaluate"));
    assert!(p.contains("SCORE:") && p.contains("RATIONALE:") && p.contains("0.0 to 1.0"));
    assert!(has_line(&p, "Iteration: 2 of 5"));
    assert!(p.contains("The combined answer."));
}

#[test]
fn checks_go_before_the_instructions_and_nothing_changes_without_them() {
    let p = evaluator_prompt("Build it.", "The answer.", 2, 5);
    assert_eq!(with_checks(p.clone(), "  \n"), p);
    let with = with_checks(p.clone(), "`cargo test` (it exited with status 101):\n1 failed");
    let checks = with.find("## Checks run after this iteration").unwrap();
    assert!(checks > with.find("## Synthesis to evaluate").unwrap());
    assert!(checks < with.find("## How to answer").unwrap());
    assert!(with.contains("1 failed"));
    let own = synthesis_self_eval_prompt("Build it.", &results(), &[], 3, 5);
    let with = with_checks(own, "12 passed");
    assert!(with.find("12 passed").unwrap() < with.find("## Self-evaluation").unwrap());
}

#[test]
fn single_agent_prompts() {
    let p = reflection_followup_prompt("Write a haiku.", 2, 4, Some("Too many syllables."));
    assert!(p.contains("[[REFLECTION_COMPLETE]]") && has_line(&p, "Iteration: 2 of 4"));
    assert!(p.contains("Too many syllables.") && p.contains("Write a haiku."));
    assert!(!reflection_followup_prompt("g", 1, 3, None).contains("Evaluator feedback"));

    let e = reflection_evaluator_prompt("Write a haiku.", "An old pond...", 1, 3);
    assert!(e.contains("PASS") && e.contains("FAIL:") && has_line(&e, "## Answer to evaluate"));
    assert!(e.contains("An old pond..."));
}

#[test]
fn sequential_labels_earlier_answers() {
    assert_eq!(sequential_prompt("Name a colour.", &[]), "Name a colour.");
    let earlier = vec![
        WorkerResult {
            name: "first".into(),
            success: true,
            duration: Duration::ZERO,
            text: "Red.".into(),
        },
        WorkerResult {
            name: "second".into(),
            success: false,
            duration: Duration::ZERO,
            text: "error: 500".into(),
        },
    ];
    let p = sequential_prompt("Name a colour.", &earlier);
    assert!(p.starts_with("Name a colour."));
    assert!(has_line(&p, "### first") && p.contains("Red."));
    assert!(has_line(&p, "### second (failed)") && p.contains("error: 500"));
}

#[test]
fn notes_come_before_the_prompt_one_line_each() {
    let text = prompt_with_notes(&["check the tests ".into(), "be brief".into()], "Your task: X");
    assert_eq!(
        text,
        "## A note from the user, for you alone\n- check the tests\n- be brief\n\nYour task: X"
    );
}
