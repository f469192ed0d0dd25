use super::*;

fn a(worker: &str, task: &str) -> Assignment {
    Assignment {
        worker: worker.to_string(),
        task: task.to_string(),
    }
}

fn names(plan: &ParsedPlan) -> Vec<&str> {
    plan.dropped.iter().map(|d| d.name.as_str()).collect()
}

#[test]
fn block_with_mixed_case_markers_resolves() {
    let plan = parse_assignments(
        "@Worker:Team-Worker-1\nDo the task.\n@End",
        &["team-worker-1"],
        "Team",
    );
    assert_eq!(plan.assignments, vec![a("team-worker-1", "Do the task.")]);
    assert!(plan.dropped.is_empty());
    assert_eq!(plan.format, PlanFormat::Blocks);
}

#[test]
fn containment_is_dropped_and_reported() {
    let plan = parse_assignments(
        "@worker:coder\nWrite it.",
        &["coder-session", "reviewer-session"],
        "",
    );
    assert!(plan.assignments.is_empty());
    assert_eq!(names(&plan), vec!["coder"]);
    assert!(
        plan.dropped[0].reason.contains("no worker named"),
        "{:?}",
        plan.dropped
    );
}

#[test]
fn fenced_json_is_tried_first() {
    let text = "Plan below.\n```json\n[{\"worker\":\"alpha\",\"task\":\"Do A\"},{\"worker\":\"ghost\",\"task\":\"x\"}]\n```\nThanks.";
    let plan = parse_assignments(text, &["alpha", "beta"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Do A")]);
    assert_eq!(names(&plan), vec!["ghost"]);
    assert_eq!(plan.commentary, "Plan below.\nThanks.");
    assert_eq!(plan.format, PlanFormat::Json);
}

#[test]
fn bare_and_plain_fenced_json() {
    let bare = "[\n  {\"worker\": \"beta\", \"task\": \"Do B\"}\n]";
    let plan = parse_assignments(bare, &["alpha", "beta"], "");
    assert_eq!(plan.assignments, vec![a("beta", "Do B")]);
    assert_eq!(plan.commentary, "");

    let fenced = "```\n[{\"Worker\": \"alpha\", \"Task\": \" Do A \"}]\n```";
    let plan = parse_assignments(fenced, &["alpha"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Do A")]);

    let with_prose_after = "[{\"worker\": \"alpha\", \"task\": \"Do A\"}] and that is all";
    let plan = parse_assignments(with_prose_after, &["alpha"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Do A")]);
    assert_eq!(plan.commentary, "and that is all");
}

#[test]
fn json_that_is_not_a_plan_falls_back_to_blocks() {
    let text = "[1, 2, 3]\n@worker:alpha Do A";
    let plan = parse_assignments(text, &["alpha"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Do A")]);
    assert_eq!(plan.commentary, "[1, 2, 3]");
}

#[test]
fn json_items_without_worker_or_task_are_dropped() {
    let text = r#"[{"worker": "alpha", "task": ""}, {"task": "orphan"}, {"worker": "beta", "task": "B"}]"#;
    let plan = parse_assignments(text, &["alpha", "beta"], "");
    assert_eq!(plan.assignments, vec![a("beta", "B")]);
    assert_eq!(plan.dropped.len(), 2);
    assert_eq!(
        plan.dropped[0],
        Dropped {
            name: "alpha".into(),
            reason: "empty task".into()
        }
    );
    assert!(plan.dropped[1].reason.contains("worker"));
}

#[test]
fn one_bad_element_does_not_discard_the_valid_ones() {
    let text = r#"```json
[{"worker": "alpha", "task": "Do A"}, "also do C", {"worker": "beta", "task": 5}, {"worker": "gamma", "task": "Do G"}, 7]
```"#;
    let plan = parse_assignments(text, &["alpha", "beta", "gamma"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Do A"), a("gamma", "Do G")]);
    assert_eq!(plan.format, PlanFormat::Json);
    assert_eq!(plan.commentary, "", "the raw JSON is not the answer");
    let reasons: Vec<&str> = plan.dropped.iter().map(|d| d.reason.as_str()).collect();
    assert_eq!(
        reasons,
        vec![
            r#"JSON item "also do C" is a string, not an assignment object"#,
            r#""task" is a number, not text"#,
            "JSON item 7 is a number, not an assignment object",
        ]
    );
    assert_eq!(names(&plan), vec!["", "beta", ""]);
}

#[test]
fn json_naming_only_unknown_workers_falls_back_to_the_blocks_after_it() {
    let text = "[{\"worker\": \"ghost\", \"task\": \"x\"}]\n@worker:alpha\nDo A\n@end\n@worker:beta Do B";
    let plan = parse_assignments(text, &["alpha", "beta"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Do A"), a("beta", "Do B")]);
    assert_eq!(plan.format, PlanFormat::Blocks);
    assert_eq!(
        names(&plan),
        vec!["ghost"],
        "the JSON's unknown worker is still reported"
    );
    // Without blocks, the JSON result stands: nothing assigned, the worker reported.
    let plan = parse_assignments("[{\"worker\": \"ghost\", \"task\": \"x\"}]", &["alpha"], "");
    assert!(plan.assignments.is_empty());
    assert_eq!(plan.format, PlanFormat::Json);
    assert_eq!(names(&plan), vec!["ghost"]);
}

#[test]
fn inline_blocks_and_commentary() {
    let text =
        "I will split this.\n@worker:alpha Do A\nwith detail\n@worker:beta\nDo B\n@end\nThat's the plan.";
    let plan = parse_assignments(text, &["alpha", "beta"], "");
    assert_eq!(
        plan.assignments,
        vec![a("alpha", "Do A\nwith detail"), a("beta", "Do B")]
    );
    assert_eq!(plan.commentary, "I will split this.\nThat's the plan.");
}

#[test]
fn several_tasks_for_one_worker_are_joined_in_order() {
    let text = "@worker:alpha First\n@worker:beta Other\n@worker:ALPHA\nSecond\n@end";
    let plan = parse_assignments(text, &["alpha", "beta"], "");
    assert_eq!(
        plan.assignments,
        vec![a("alpha", "First\n---\nSecond"), a("beta", "Other")]
    );
}

#[test]
fn names_with_spaces_and_quotes() {
    let workers = ["Code Reviewer", "Tester"];
    let plan = parse_assignments("@worker:Code Reviewer\nReview the diff.", &workers, "");
    assert_eq!(plan.assignments, vec![a("Code Reviewer", "Review the diff.")]);

    let plan = parse_assignments("@worker:\"Code Reviewer\" Review the diff.", &workers, "");
    assert_eq!(plan.assignments, vec![a("Code Reviewer", "Review the diff.")]);

    let plan = parse_assignments("@worker:Code Reviewer review the diff", &workers, "");
    assert_eq!(plan.assignments, vec![a("Code Reviewer", "review the diff")]);

    let plan = parse_assignments("@worker:`Tester`: run it", &workers, "");
    assert_eq!(plan.assignments, vec![a("Tester", "run it")]);

    // The first word wins when it names a worker on its own.
    let plan = parse_assignments("@worker:code review the diff", &["code", "code review"], "");
    assert_eq!(plan.assignments, vec![a("code", "review the diff")]);
}

#[test]
fn first_word_is_the_name_when_the_whole_line_is_not() {
    let plan = parse_assignments("@worker:alpha Write the parser - carefully", &["alpha"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Write the parser - carefully")]);
    let plan = parse_assignments("@worker:alpha - Write the parser", &["alpha"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Write the parser")]);
}

#[test]
fn bullets_and_emphasis_before_the_marker() {
    let text = "- @worker:alpha Do A\n2. **@worker:beta** Do B\n  * `@worker:gamma` Do C";
    let plan = parse_assignments(text, &["alpha", "beta", "gamma"], "");
    assert_eq!(
        plan.assignments,
        vec![a("alpha", "Do A"), a("beta", "Do B"), a("gamma", "Do C")]
    );
}

#[test]
fn marker_inside_a_sentence_is_not_an_assignment() {
    let text = "@worker:alpha Compare your result with what @worker:beta produced.";
    let plan = parse_assignments(text, &["alpha", "beta"], "");
    assert_eq!(
        plan.assignments,
        vec![a("alpha", "Compare your result with what @worker:beta produced.")]
    );
    let prose = "Use the @worker:<name> format.";
    let plan = parse_assignments(prose, &["alpha"], "");
    assert!(plan.assignments.is_empty() && plan.dropped.is_empty());
    assert_eq!(plan.format, PlanFormat::None);
    assert_eq!(plan.commentary, prose);
}

#[test]
fn inline_end_and_empty_tasks() {
    let text = "@worker:alpha Do A @end\nbetween\n@worker:beta\n@end\n@worker:\nstray";
    let plan = parse_assignments(text, &["alpha", "beta"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Do A")]);
    assert_eq!(plan.commentary, "between");
    assert_eq!(plan.dropped.len(), 2);
    assert_eq!(
        plan.dropped[0],
        Dropped {
            name: "beta".into(),
            reason: "empty task".into()
        }
    );
    assert!(plan.dropped[1].reason.contains("no worker name"));
}

#[test]
fn worker_1_never_becomes_worker_10() {
    let plan = parse_assignments("@worker:worker-1 Do it", &["worker-10", "worker-11"], "");
    assert!(plan.assignments.is_empty());
    assert_eq!(names(&plan), vec!["worker-1"]);
    let plan = parse_assignments("@worker:worker-1 Do it", &["worker-1", "worker-10"], "");
    assert_eq!(plan.assignments, vec![a("worker-1", "Do it")]);
}

#[test]
fn short_and_full_names_with_team_prefix() {
    let workers = ["dev-team-backend", "dev-team-frontend"];
    let text = "@worker:backend API\n@worker:Dev Team-Frontend UI\n@worker:dev-team-backend more API";
    let plan = parse_assignments(text, &workers, "Dev Team");
    assert_eq!(
        plan.assignments,
        vec![
            a("dev-team-backend", "API\n---\nmore API"),
            a("dev-team-frontend", "UI")
        ]
    );
}

#[test]
fn fuzzy_typo_resolves_without_eating_the_task() {
    let workers = ["security-reviewer", "tester"];
    let plan = parse_assignments("@worker:security-reviewer Go", &workers, "");
    assert_eq!(plan.assignments, vec![a("security-reviewer", "Go")]);
    let plan = parse_assignments("@worker:securty-reviewer\nCheck auth.", &workers, "");
    assert_eq!(plan.assignments, vec![a("security-reviewer", "Check auth.")]);
}

#[test]
fn blocks_wrapped_in_a_fence() {
    let text = "```\n@worker:alpha\nDo A\n@worker:beta\nDo B\n```\nDone.";
    let plan = parse_assignments(text, &["alpha", "beta"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Do A"), a("beta", "Do B")]);
    // A task that really contains a code block keeps it.
    let text = "@worker:alpha\nRun:\n```\nmake\n```\n@end";
    let plan = parse_assignments(text, &["alpha"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Run:\n```\nmake\n```")]);
}

#[test]
fn crlf_input() {
    let text = "@worker:alpha\r\nDo A\r\n@end\r\nbye\r\n";
    let plan = parse_assignments(text, &["alpha"], "");
    assert_eq!(plan.assignments, vec![a("alpha", "Do A")]);
    assert_eq!(plan.commentary, "bye");
}

#[test]
fn no_assignment_is_all_commentary() {
    let plan = parse_assignments("  The answer is 42.\n", &["alpha"], "");
    assert!(!plan.has_assignments());
    assert_eq!(plan.commentary, "The answer is 42.");
    assert_eq!(plan.format, PlanFormat::None);
}

#[test]
fn a_large_plan_parses_every_block() {
    let mut text = String::new();
    for i in 0..2_000 {
        text.push_str(&format!("@worker:w{}\nTask number {i}.\n@end\nnote {i}\n", i % 4));
    }
    let plan = parse_assignments(&text, &["w0", "w1", "w2", "w3"], "");
    assert_eq!(plan.assignments.len(), 4);
    assert_eq!(plan.assignments[0].task.matches(TASK_SEPARATOR).count(), 499);
    assert!(plan.commentary.starts_with("note 0\nnote 1\n"));
}

#[test]
fn very_long_names_still_match_whole() {
    let workers = ["the very long named senior backend api worker", "tester"];
    let plan = parse_assignments(
        "@worker:The Very Long Named Senior Backend API Worker\nDo it.",
        &workers,
        "",
    );
    assert_eq!(plan.assignments, vec![a(workers[0], "Do it.")]);
    let plan = parse_assignments(
        "@worker:tester run every test in the whole suite now",
        &workers,
        "",
    );
    assert_eq!(
        plan.assignments,
        vec![a("tester", "run every test in the whole suite now")]
    );
}

#[test]
fn random_plans_never_panic_and_tasks_come_from_the_text() {
    let pieces = [
        "@worker:",
        "@WORKER: ",
        "@end",
        " @end",
        "alpha",
        "Beta Two",
        "`",
        "\"",
        "“",
        "**",
        "- ",
        "1. ",
        "## ",
        "```",
        "```json\n",
        "[",
        "]",
        "{\"worker\":\"alpha\",\"task\":\"t\"}",
        ",",
        "\n",
        "\r\n",
        " ",
        "é",
        "漢",
        "task words",
        ":",
        "—",
        "[[NEEDS_ITERATION]]",
    ];
    let workers = ["alpha", "Beta Two", "team-gamma"];
    let mut rng = fastrand::Rng::with_seed(0xa55);
    for _ in 0..3000 {
        let len = rng.usize(0..30);
        let text: String = (0..len).map(|_| pieces[rng.usize(0..pieces.len())]).collect();
        let plan = parse_assignments(&text, &workers, "Team");
        for assignment in &plan.assignments {
            assert!(workers.contains(&assignment.worker.as_str()), "{text:?}");
            assert!(!assignment.task.is_empty(), "{text:?}");
            for part in assignment.task.split(TASK_SEPARATOR) {
                assert!(text.contains(part.trim()), "task {part:?} not from {text:?}");
            }
        }
    }
}
