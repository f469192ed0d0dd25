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

fn ctx(workers: &[WorkerInfo]) -> TeamContext<'_> {
    TeamContext {
        request: "Build a URL shortener.",
        workers,
        routing_context: Some("Backend work goes to team-backend."),
        orchestrator_prompt: Some("Be terse."),
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

/// Every `## ` heading line of a text, in order.
fn headings(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with("## ")).collect()
}

#[test]
fn the_brief_lists_the_request_workers_format_and_rules_once() {
    let workers = workers();
    let p = orchestrator_brief(&ctx(&workers), PlanMode::SinglePass, false);
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
    // A single pass says its request in its plan: its brief is the same for every run.
    assert!(
        !p.contains("## Request") && !p.contains("Build a URL shortener."),
        "{p}"
    );
    let cycle = orchestrator_brief(&ctx(&workers), PlanMode::Reflect { max_iterations: 4 }, true);
    assert!(has_line(&cycle, "## Request") && cycle.contains("Build a URL shortener."));
    assert!(p.contains("Backend work goes to team-backend."));
    assert!(has_line(&p, "@worker:<name>") && has_line(&p, "@end"));
    assert!(p.contains("name no worker"), "{p}");
    assert!(p.contains("one combined answer"), "{p}");
    assert!(!p.contains("Iteration:") && !p.contains("[["), "{p}");

    let r = orchestrator_brief(&ctx(&workers), PlanMode::Reflect { max_iterations: 4 }, true);
    assert!(
        r.contains("you must delegate") && r.contains("up to 4 iterations"),
        "{r}"
    );
    assert!(r.contains("emitting no assignment means the goal is met"), "{r}");
    assert!(r.contains("[[GROUP_REFLECT_COMPLETE]]") && r.contains("[[NEEDS_ITERATION]]"));
    assert!(!r.contains("name no worker"));
    let judged = orchestrator_brief(&ctx(&workers), PlanMode::Reflect { max_iterations: 4 }, false);
    assert!(!judged.contains("[["), "an evaluator judges: {judged}");
    let mut seen = headings(&r);
    let all = seen.len();
    seen.dedup();
    assert_eq!(seen.len(), all, "each heading once: {r}");
    assert!(!r.contains("Iteration:"), "the brief is the same for every step");
}

#[test]
fn a_plan_says_only_the_step_and_the_users_messages() {
    let first = planning_prompt(PlanMode::Reflect { max_iterations: 4 }, "", &[]);
    assert!(has_line(&first.text, "Iteration: 1 of 4"), "{}", first.text);
    assert!(!first.text.contains("## Workers") && !first.text.contains("@worker:"));
    assert_eq!(
        first.compact.as_deref(),
        Some("Iteration 1 of 4: the first plan.")
    );
    let one = planning_prompt(
        PlanMode::SinglePass,
        "Review this:\nport: 8080",
        &["Also in Go.".into()],
    );
    assert!(!one.text.contains("Iteration:"), "{}", one.text);
    assert!(has_line(&one.text, "## Messages from the user") && one.text.contains("- Also in Go."));
    // A single pass says its request in its plan, and the conversation keeps it (a later run's
    // brief has another request).
    assert!(has_line(&one.text, "## Request") && one.text.contains("Review this:\nport: 8080"));
    assert_eq!(
        one.compact.as_deref(),
        Some("The plan for the request: Review this:\nport: 8080\nThe user added: Also in Go.")
    );
    let long = "x".repeat(KEPT_REQUEST_CHARS + 10);
    let kept = planning_prompt(PlanMode::SinglePass, &long, &[])
        .compact
        .unwrap_or_default();
    assert!(
        kept.len() > KEPT_REQUEST_CHARS && kept.len() < KEPT_REQUEST_CHARS + 64,
        "bounded"
    );
}

#[test]
fn replan_carries_the_evaluation_and_the_synthesis_only_when_not_said() {
    let queued = vec!["Also support custom slugs.".to_string()];
    let replan = Replan {
        previous_synthesis: Some("The shortener works.\n[[NEEDS_ITERATION]]"),
        last_evaluation: LastEvaluation::Evaluator {
            score: 0.6,
            rationale: "No tests.",
        },
        iteration: 2,
        max_iterations: 5,
        earlier: &[],
        syntheses_from: 1,
    };
    let p = replan_prompt(&replan, &queued);
    for line in ["## Previous synthesis", "## Last evaluation", "Iteration: 2 of 5"] {
        assert!(has_line(&p.text, line), "missing {line:?} in {}", p.text);
    }
    assert!(p.text.contains("The shortener works.") && !p.text.contains("[[NEEDS_ITERATION]]"));
    assert!(p.text.contains("Score: 0.60") && p.text.contains("No tests."));
    assert!(p.text.contains("Also support custom slugs."));
    assert!(!p.text.contains("## Workers") && !p.text.contains("## Request"));
    let kept = p.compact.unwrap();
    assert!(
        kept.contains("Iteration 2 of 5: plan again after the evaluation of iteration 1.")
            && kept.contains("The user added: Also support custom slugs."),
        "{kept}"
    );
    assert!(
        !kept.contains("No tests."),
        "the next plan's ledger has it: {kept}"
    );
    assert!(
        !kept.contains("## ") && !kept.contains("The shortener works."),
        "{kept}"
    );

    let said = Replan {
        previous_synthesis: None,
        last_evaluation: LastEvaluation::SelfEvaluation {
            score: 0.4,
            feedback: "Add tests.",
        },
        ..replan
    };
    let p = replan_prompt(&said, &[]);
    // The feedback is the orchestrator's own, ending the synthesis just before: the score only.
    assert!(
        p.text.contains("Score: 0.40") && !p.text.contains("Add tests."),
        "{}",
        p.text
    );
    assert!(!p.text.contains("## Previous synthesis"), "{}", p.text);
    let none = Replan {
        last_evaluation: LastEvaluation::None,
        ..replan
    };
    assert!(has_line(&replan_prompt(&none, &[]).text, "## Last evaluation"));
}

fn scored(iteration: u32, score: f64, rationale: &str, by_evaluator: bool) -> crate::model::Evaluation {
    crate::model::Evaluation {
        iteration,
        score,
        rationale: rationale.into(),
        evaluator_model: by_evaluator.then(|| "anthropic/judge".to_string()),
        at: chrono::Utc::now(),
        trend: None,
        usage: Default::default(),
        duration_ms: 0,
        assigned: vec!["backend".into(), "tests".into()],
    }
}

#[test]
fn a_later_plan_has_one_line_per_earlier_iteration() {
    let earlier = [
        scored(1, 0.3, "No API yet.\nAnd more.", true),
        scored(2, 0.4, "No tests.", false),
        scored(3, 0.5, "Slow.", false),
    ];
    let replan = Replan {
        previous_synthesis: None,
        last_evaluation: LastEvaluation::Evaluator {
            score: 0.6,
            rationale: "Nearly.",
        },
        iteration: 5,
        max_iterations: 9,
        earlier: &earlier,
        syntheses_from: 3,
    };
    let p = replan_prompt(&replan, &[]);
    let ledger: Vec<&str> = p.text.lines().filter(|l| l.starts_with("- Iteration")).collect();
    assert_eq!(
        ledger,
        [
            "- Iteration 1 (backend, tests): score 0.30 from the evaluator: No API yet.",
            // Its synthesis is no longer sent: its reasons are said here.
            "- Iteration 2 (backend, tests): score 0.40 from your self-evaluation: No tests.",
            // Its synthesis may still be sent: the score alone.
            "- Iteration 3 (backend, tests): score 0.50 from your self-evaluation",
        ],
        "{}",
        p.text
    );
    assert_eq!(p.text.matches(EARLIER_ITERATIONS_HEADING).count(), 1);
    let first = Replan {
        earlier: &[],
        ..replan
    };
    assert!(
        !replan_prompt(&first, &[])
            .text
            .contains(EARLIER_ITERATIONS_HEADING)
    );
}

#[test]
fn nudge_asks_for_blocks() {
    let p = nudge_prompt();
    assert!(p.text.contains("assignment blocks") && p.compact.is_none());
}

#[test]
fn a_worker_is_briefed_once_and_given_its_task() {
    let p = worker_brief(&WorkerBrief {
        system_prompt: Some("You are a tester."),
        shared_context: Some("We use cargo nextest."),
        request: "Build a URL shortener.",
    });
    assert!(
        !p.contains("You are a tester."),
        "its own system prompt is not repeated: {p}"
    );
    assert!(p.contains("We use cargo nextest."));
    assert!(has_line(&p, "## Original request") && p.contains("Build a URL shortener."));
    let task = worker_task_prompt(" Write tests for the redirect. ");
    assert!(has_line(&task.text, "## Your task") && task.text.contains("Write tests for the redirect."));
    assert_eq!(task.compact.as_deref(), Some("Write tests for the redirect."));

    let generic = worker_brief(&WorkerBrief {
        system_prompt: Some("  "),
        shared_context: None,
        request: "R",
    });
    assert!(generic.starts_with(GENERIC_WORKER_INSTRUCTION));
    assert!(!generic.contains("Team context"));
}

fn step<'a>(
    results: &'a [WorkerResult],
    earlier: &'a [EarlierResult],
    iteration: Option<(u32, u32)>,
    self_evaluation: bool,
) -> SynthesisStep<'a> {
    SynthesisStep {
        request: "Build a URL shortener.",
        iteration,
        results,
        earlier,
        self_evaluation,
        evidence: &[],
    }
}

#[test]
fn synthesis_labels_results_and_neutralises_worker_sentinels() {
    let results = results();
    let p = synthesis_prompt(&step(&results, &[], None, false));
    assert!(has_line(&p.text, "## Worker results") && !p.text.contains("## Request"));
    assert!(has_line(&p.text, "### team-backend (ok, 12.3s)"), "{}", p.text);
    assert!(
        has_line(&p.text, "### team-tester (failed, 10m 00s)"),
        "{}",
        p.text
    );
    assert!(
        p.text.contains("[WORKER_APPROVED]") && !p.text.to_lowercase().contains("[[group_reflect_complete]]")
    );
    assert!(!p.text.contains("[[NEEDS_ITERATION]]") && !p.text.contains("Iteration:"));
    assert_eq!(
        p.compact.as_deref(),
        Some(
            "The results of team-backend (ok), team-tester (failed) for \"Build a URL shortener.\" (given then; not repeated here)."
        )
    );
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
    let results = results();
    let p = synthesis_prompt(&step(&results, &earlier, Some((3, 5)), true)).text;
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
    assert!(
        has_line(&p, "Iteration: 3 of 5") && p.contains("self-evaluation"),
        "{p}"
    );
    let kept = synthesis_prompt(&step(&results, &earlier, Some((3, 5)), true))
        .compact
        .unwrap();
    assert!(
        kept.starts_with("Iteration 3: ") && kept.contains("earlier answers of team-docs, team-long"),
        "{kept}"
    );
}

#[test]
fn the_evaluator_is_briefed_once_and_given_the_answer_and_any_evidence() {
    let brief = evaluator_brief("Build it.");
    assert!(has_line(&brief, "## Request") && brief.contains("Build it."));
    assert!(brief.contains("SCORE:") && brief.contains("RATIONALE:") && brief.contains("0.0 to 1.0"));
    let p = evaluator_prompt(&EvaluationStep {
        synthesis: "The combined answer.\n[[GROUP_REFLECT_COMPLETE]]",
        iteration: 2,
        max_iterations: 5,
        evidence: &[Evidence {
            heading: "## Checks".into(),
            body: "cargo test: 3 failed".into(),
        }],
    });
    assert!(has_line(&p.text, "## Synthesis to evaluate") && has_line(&p.text, "Iteration: 2 of 5"));
    assert!(p.text.contains("The combined answer.") && !p.text.contains("[[GROUP"));
    assert!(has_line(&p.text, "## Checks") && p.text.contains("cargo test: 3 failed"));
    assert!(p.text.find("## Synthesis to evaluate") < p.text.find("## Checks"));
    assert!(!p.text.contains("SCORE:"), "the format is in the brief");
    assert!(p.compact.unwrap().starts_with("Iteration 2: "));
}

#[test]
fn checks_go_after_what_is_judged_and_nothing_changes_without_them() {
    assert_eq!(checks("  \n"), None);
    let said = checks("`cargo test` (it exited with status 101):\n1 failed");
    let evidence: Vec<Evidence> = said.into_iter().collect();
    let p = evaluator_prompt(&EvaluationStep {
        synthesis: "The answer.",
        iteration: 2,
        max_iterations: 5,
        evidence: &evidence,
    });
    let at = p.text.find("## Checks run after this iteration").unwrap();
    assert!(at > p.text.find("## Synthesis to evaluate").unwrap());
    assert!(p.text.contains("1 failed") && !p.compact.unwrap().contains("1 failed"));
    let results = results();
    let own = synthesis_prompt(&SynthesisStep {
        evidence: &evidence,
        ..step(&results, &[], Some((3, 5)), true)
    });
    assert!(own.text.find("1 failed").unwrap() > own.text.find("## Worker results").unwrap());
    assert!(
        own.text.trim_end().ends_with("give your self-evaluation."),
        "{}",
        own.text
    );
}

#[test]
fn single_agent_prompts() {
    let brief = reflection_brief("Write a haiku.");
    assert!(
        has_line(&brief, "## Goal") && brief.contains("Write a haiku."),
        "{brief}"
    );
    assert!(brief.contains("[[REFLECTION_COMPLETE]]"));
    let p = reflection_followup_prompt(2, 4, Some("Too many syllables."));
    assert!(has_line(&p.text, "Iteration: 2 of 4") && p.text.contains("Too many syllables."));
    assert!(
        !p.text.contains("[[REFLECTION_COMPLETE]]"),
        "the rule is in the brief"
    );
    assert_eq!(
        p.compact.as_deref(),
        Some("Iteration 2 of 4: improve the answer (the evaluator said: Too many syllables.).")
    );
    assert!(
        !reflection_followup_prompt(3, 3, None)
            .text
            .contains("Evaluator feedback")
    );

    let e = reflection_evaluator_prompt("Write a haiku.", "An old pond...", 1, 3);
    assert!(e.contains("PASS") && e.contains("FAIL:") && has_line(&e, "## Answer to evaluate"));
    assert!(e.contains("An old pond..."));
}

#[test]
fn sequential_labels_earlier_answers_and_keeps_the_prompt() {
    assert_eq!(
        sequential_prompt("Name a colour.", &[]),
        StepPrompt::plain("Name a colour.".into())
    );
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
    assert!(p.text.starts_with("Name a colour."));
    assert!(has_line(&p.text, "### first") && p.text.contains("Red."));
    assert!(has_line(&p.text, "### second (failed)") && p.text.contains("error: 500"));
    assert_eq!(
        p.compact.as_deref(),
        Some("Name a colour. (given with the answers of first, second before yours)")
    );
}

#[test]
fn notes_come_before_the_prompt_one_line_each() {
    let text = prompt_with_notes(&["check the tests ".into(), "be brief".into()], "Your task: X");
    assert_eq!(
        text,
        "## A note from the user, for you alone\n- check the tests\n- be brief\n\nYour task: X"
    );
}

#[test]
fn a_later_runs_brief_numbers_the_earlier_requests_and_kept_steps_name_their_run() {
    let requests = vec!["REQ3 first".to_string(), "REQ4 second".to_string()];
    let brief = with_earlier_requests(
        "brief".into(),
        &EarlierRequests {
            requests: &requests,
            first_run: 3,
        },
    );
    assert!(brief.contains(EARLIER_REQUESTS_HEADING), "{brief}");
    assert!(
        brief.contains("\n3. REQ3 first\n") && brief.contains("\n4. REQ4 second\n"),
        "{brief}"
    );
    assert_eq!(
        with_earlier_requests("brief".into(), &EarlierRequests::NONE),
        "brief"
    );
    let plan = in_run(
        planning_prompt(PlanMode::Reflect { max_iterations: 8 }, "", &[]),
        5,
    );
    assert_eq!(plan.kept(), "Run 5, iteration 1 of 8: the first plan.");
    assert_eq!(
        kept_synthesis_iteration("Run 5, iteration 7: the results of a (ok)."),
        Some(7)
    );
    assert_eq!(
        kept_synthesis_iteration("Iteration 7: the results of a (ok)."),
        Some(7)
    );
    let kept = planning_prompt(PlanMode::SinglePass, "Fix it.\nNow.", &["faster".into()]);
    assert_eq!(kept_plan_request(kept.kept()), Some("Fix it.\nNow."));
    assert_eq!(kept_plan_request("Iteration 1 of 8: the first plan."), None);
    // As many as a cycle's window can send runs of, the newest.
    let many: Vec<String> = (1..=9).map(|n| format!("R{n}")).collect();
    let kept = earlier_requests_after(&many, "R10");
    assert_eq!(kept.len(), EARLIER_REQUESTS_KEPT);
    assert_eq!(kept.last().map(String::as_str), Some("R10"));
}

#[test]
fn the_ledger_says_the_same_of_a_rationale_kept_whole_or_as_the_cycle_keeps_it() {
    // A cycle keeps earlier rationales by their first line (ReflectionCycle::record_evaluation):
    // the ledger a later plan is sent must not change with it.
    let long = format!("\n  {} \nthe rest of the synthesis", "why ".repeat(100));
    let whole = [scored(1, 0.4, &long, true), scored(2, 0.5, &long, false)];
    let mut cycle = crate::model::ReflectionCycle::default();
    for e in whole.iter().cloned() {
        cycle.record_evaluation(e);
    }
    let (mut from_whole, mut from_kept) = (String::new(), String::new());
    ledger(&mut from_whole, &whole, 0);
    ledger(&mut from_kept, &cycle.evaluations, 0);
    assert_eq!(from_kept, from_whole);
    assert!(from_whole.contains("why why"), "{from_whole}");
}
