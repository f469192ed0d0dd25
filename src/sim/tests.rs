//! The sim against every prompt kind of PROMPT_CONTRACT.md.

use super::*;
use crate::providers::ChatMessage;

const WORKERS: &str = "## Workers\n- `architect` (model: sim/a): Designs systems\n- `critic` (model: sim/b): Finds flaws in plans\n- `writer` (model: sim/c): Writes clear prose\n";

fn ask(system: Option<&str>, user: &str) -> String {
    let mut req = TurnRequest::new("default", vec![ChatMessage::user(user)]);
    req.system = system.map(Into::into);
    simulate(&req).0
}

fn kind_of(user: &str) -> PromptKind {
    classify(&SimPrompt { system: "", user })
}

fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("@worker:") {
            let task: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "@end").collect();
            out.push((name.trim().to_string(), task.join("\n")));
        }
    }
    out
}

fn planning_prompt() -> String {
    format!(
        "{WORKERS}\n## Request\nDesign a caching layer\n\nAnswer with blocks of the form\n@worker:<name>\n<task>\n@end\n"
    )
}

fn replan_prompt(n: u32, evaluation: &str) -> String {
    format!(
        "{WORKERS}\n## Request\nDesign a caching layer\n\n## Previous synthesis\nUse an LRU.\n\n## Last evaluation\n{evaluation}\n\nIteration: {n} of 4\nUse @worker:<name> blocks.\n"
    )
}

#[test]
fn planning_assigns_every_worker_with_request_and_specialization() {
    let prompt = planning_prompt();
    assert_eq!(kind_of(&prompt), PromptKind::Planning);
    let text = ask(None, &prompt);
    let b = blocks(&text);
    let names: Vec<&str> = b.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["architect", "critic", "writer"], "{text}");
    assert!(
        b[0].1.contains("Design a caching layer") && b[0].1.contains("Designs systems"),
        "{text}"
    );
    assert!(b[1].1.contains("Finds flaws"), "{text}");
    assert!(
        !text.lines().next().unwrap_or("").starts_with("@worker"),
        "commentary first: {text}"
    );
    assert_eq!(text, ask(None, &prompt), "deterministic");
}

#[test]
fn nudge_is_answered_with_assignments_too() {
    let prompt = format!(
        "You did not assign anyone. Assign with @worker:<name> ... @end.\n\n{WORKERS}\n## Request\nFix the bug\n"
    );
    assert_eq!(blocks(&ask(Some("You are the orchestrator."), &prompt)).len(), 3);
}

#[test]
fn replan_assigns_a_subset_addressing_feedback_until_the_goal_is_met() {
    let evaluation = "SCORE: 0.60\nRATIONALE: needs benchmarks for eviction\n[[NEEDS_ITERATION]]";
    let text = ask(None, &replan_prompt(2, evaluation));
    let b = blocks(&text);
    assert!(!b.is_empty() && b.len() <= 3, "{text}");
    for (_, task) in &b {
        assert!(task.contains("needs benchmarks for eviction"), "{text}");
    }
    // Subsets vary with the prompt but are never empty.
    for i in 0..20 {
        let t = ask(
            None,
            &replan_prompt(2, &format!("SCORE: 0.5{}\nRATIONALE: more {i}", i % 10)),
        );
        assert!(!blocks(&t).is_empty(), "{t}");
    }
    let done = ask(None, &replan_prompt(4, evaluation));
    assert!(blocks(&done).is_empty() && !done.contains("@worker:"), "{done}");
    assert!(done.to_lowercase().contains("goal is met"), "{done}");
    let bare = replan_prompt(2, evaluation).replace("Use @worker:<name> blocks.\n", "");
    assert_eq!(
        kind_of(&bare),
        PromptKind::Planning,
        "a replan without the format line"
    );
    let high = ask(None, &replan_prompt(2, "SCORE: 0.92\nRATIONALE: good"));
    assert!(blocks(&high).is_empty(), "{high}");
}

#[test]
fn worker_answers_at_length_with_its_focus() {
    let user = "## Original request\nDesign a caching layer\n\n## Your task\nList eviction policies\n";
    assert_eq!(kind_of(user), PromptKind::Worker);
    let text = ask(Some("Designs systems for scale.\nMore lines."), user);
    assert!(text.len() >= 150, "{text}");
    assert!(text.contains("Designs systems for scale."), "{text}");
    assert!(text.contains("List eviction policies"), "{text}");
}

fn synthesis_prompt(n: u32, self_eval: bool) -> String {
    let mut p = format!(
        "## Request\nDesign a caching layer\n\n## Worker results\n### architect (ok, 1.2 s)\nUse a two-level cache. Details follow.\n\n### critic (failed, 0.3 s)\nerror: timed out\n\nIteration: {n} of 3\n"
    );
    if self_eval {
        p.push_str("End with [[GROUP_REFLECT_COMPLETE]] when done, else [[NEEDS_ITERATION]] and feedback.\n");
    }
    p
}

#[test]
fn synthesis_quotes_each_worker_and_varies_with_iteration() {
    let p1 = synthesis_prompt(1, false);
    assert_eq!(kind_of(&p1), PromptKind::Synthesis);
    let t1 = ask(None, &p1);
    assert!(t1.contains("architect (ok): \"Use a two-level cache.\""), "{t1}");
    assert!(t1.contains("critic (failed)"), "{t1}");
    assert!(!t1.contains("[["), "no sentinel without self-evaluation: {t1}");
    let t2 = ask(None, &synthesis_prompt(2, false));
    assert_ne!(t1, t2);
}

#[test]
fn synthesis_with_self_evaluation_completes_from_iteration_two() {
    let p = synthesis_prompt(1, true);
    assert_eq!(kind_of(&p), PromptKind::SynthesisSelfEval);
    let t1 = ask(None, &p);
    let lines: Vec<&str> = t1.lines().collect();
    let at = lines.iter().position(|l| *l == "[[NEEDS_ITERATION]]").unwrap();
    assert!(
        lines.get(at + 1).is_some_and(|l| !l.trim().is_empty()),
        "feedback line: {t1}"
    );
    assert!(!t1.contains("[[GROUP_REFLECT_COMPLETE]]"));
    let t2 = ask(None, &synthesis_prompt(2, true));
    assert_eq!(t2.lines().last(), Some("[[GROUP_REFLECT_COMPLETE]]"), "{t2}");
    assert!(!t2.contains("[[NEEDS_ITERATION]]"));
}

fn evaluator_prompt(n: u32) -> String {
    format!(
        "## Request\nDesign a caching layer\n\n## Synthesis to evaluate\nUse an LRU.\n## Worker results\n### a (ok, 1 s)\nx\n\nReply with SCORE: <0..1> and RATIONALE: <why>, then [[NEEDS_ITERATION]] or [[GROUP_REFLECT_COMPLETE]].\nIteration: {n} of 5\n"
    )
}

#[test]
fn evaluator_scores_rise_to_goal_met_at_iteration_three() {
    assert_eq!(
        kind_of(&evaluator_prompt(1)),
        PromptKind::Evaluator,
        "checked before synthesis"
    );
    let expected = [
        ("0.60", "[[NEEDS_ITERATION]]"),
        ("0.77", "[[NEEDS_ITERATION]]"),
        ("0.94", "[[GROUP_REFLECT_COMPLETE]]"),
        ("0.95", "[[GROUP_REFLECT_COMPLETE]]"),
    ];
    for (i, (score, sentinel)) in expected.iter().enumerate() {
        let text = ask(None, &evaluator_prompt(i as u32 + 1));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("SCORE: {score}"), "{text}");
        assert!(lines[1].starts_with("RATIONALE: "), "{text}");
        assert!(lines.contains(sentinel), "{text}");
    }
    assert_eq!(evaluator_score(3), 0.94);
}

#[test]
fn single_agent_follow_up_and_evaluator() {
    let follow =
        |n| format!("Improve your answer. Say [[REFLECTION_COMPLETE]] when done.\nIteration: {n} of 3\n");
    assert_eq!(kind_of(&follow(1)), PromptKind::FollowUp);
    let t1 = ask(None, &follow(1));
    assert!(!t1.contains("[[REFLECTION_COMPLETE]]"), "{t1}");
    let t2 = ask(None, &follow(2));
    assert!(t2.lines().any(|l| l == "[[REFLECTION_COMPLETE]]"), "{t2}");

    let eval = |n| {
        format!(
            "## Answer to evaluate\nSome answer.\n\nReply PASS or FAIL: <feedback>.\nIteration: {n} of 3\n"
        )
    };
    assert_eq!(kind_of(&eval(1)), PromptKind::SingleEvaluator);
    assert!(ask(None, &eval(1)).starts_with("FAIL: "));
    assert_eq!(ask(None, &eval(2)).lines().next(), Some("PASS"));
}

#[test]
fn plain_chat_says_it_is_simulated_and_markers_are_case_insensitive() {
    let text = ask(None, "hello there");
    assert!(text.contains("simulated"), "{text}");
    assert!(!text.contains("[["));
    assert_eq!(
        kind_of("## WORKER RESULTS\n### a (ok, 1 s)\nx"),
        PromptKind::Synthesis
    );
    assert_eq!(
        kind_of("Mention ## Your task inline only"),
        PromptKind::Chat,
        "headings stand alone"
    );
}

#[test]
fn latency_parsing_and_pieces() {
    assert_eq!(latency_of("slow-200ms"), Duration::from_millis(200));
    assert_eq!(latency_of("x-slow-2s"), Duration::from_secs(2));
    assert_eq!(latency_of("default"), Duration::ZERO);
    let text = "one two three four five six seven eight nine ten";
    let pieces = split_pieces(text, 4);
    assert!(pieces.len() > 1 && pieces.len() <= 4, "{pieces:?}");
    assert_eq!(pieces.concat(), text);
    assert_eq!(
        split_pieces("\u{e9}\u{e9}\u{e9}", 2).concat(),
        "\u{e9}\u{e9}\u{e9}"
    );
}

#[tokio::test]
async fn sim_streams_deltas_and_reports_usage_in_words() {
    let p = SimProvider::new("sim");
    let mut got = Vec::new();
    let out = p
        .stream_turn(
            TurnRequest::new("slow-20ms", vec![ChatMessage::user("hello there")]),
            &mut |d: &str| got.push(d.to_string()),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(out.simulated);
    assert!(got.len() > 1, "{got:?}");
    assert_eq!(got.concat(), out.text);
    let usage = out.usage.unwrap();
    assert_eq!(usage.input_tokens, 2);
    assert_eq!(usage.output_tokens, estimate_tokens(&out.text));
}

#[tokio::test]
async fn cancelled_sim_turn_is_cancelled() {
    let p = SimProvider::new("sim");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = p
        .stream_turn(
            TurnRequest::new("slow-5s", vec![ChatMessage::user("x")]),
            &mut |_: &str| {},
            cancel,
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind, crate::providers::ErrorKind::Cancelled);
}

#[test]
fn a_session_with_a_role_answers_in_it_and_builds_on_earlier_answers() {
    let alone = ask(Some("You are a skeptic.\nDoubt everything."), "Is Rust fast?");
    assert!(alone.contains("You are a skeptic."), "{alone}");
    assert!(alone.contains("Nobody has answered before me"), "{alone}");
    let chained = ask(
        Some("You are an editor."),
        "Write a note\n\n## Earlier answers in this round\n\n### drafter\nDraft.\n\n### critic (failed)\n(failed: 500)\n",
    );
    assert!(chained.contains("drafter, critic"), "{chained}");
    assert!(chained.contains("Simulated"), "always labelled: {chained}");
    let plain = ask(None, "hello");
    assert!(plain.contains("simulat"), "{plain}");
}

#[test]
fn a_relay_driver_drafts_deterministically_then_completes() {
    let prompt = |turn: u32, extra: &str| {
        format!("## Relay objective\nBuy the bike for 400\n\n## Your part\n...\n\nTurn: {turn} of 8\n{extra}")
    };
    assert_eq!(kind_of(&prompt(1, "")), PromptKind::RelayDriver);
    let first = ask(None, &prompt(1, ""));
    assert_eq!(first, ask(None, &prompt(1, "")));
    assert!(first.contains("Buy the bike for 400"), "{first}");
    assert!(!first.contains("[[RELAY_COMPLETE]]"));
    let second = ask(
        None,
        &prompt(2, "\n## Latest counterpart message\n450 is my price\n"),
    );
    assert!(second.contains("450 is my price"), "{second}");
    let revised = ask(
        None,
        &prompt(2, "\n## The user rejected your last draft\nbe firmer\n"),
    );
    assert!(revised.starts_with("(revised: be firmer)"), "{revised}");
    let last = ask(None, &prompt(4, "\n## Latest counterpart message\ndeal at 420\n"));
    assert!(last.trim_end().ends_with("[[RELAY_COMPLETE]]"), "{last}");
    // A relay allowed two turns closes after them.
    let short = ask(None, "## Relay objective\nx\n\nTurn: 3 of 2\n");
    assert!(short.contains("[[RELAY_COMPLETE]]"), "{short}");
}

#[test]
fn a_relay_counterpart_counters_the_drafts_deterministically() {
    // Whatever its system prompt says: the sim driver's drafts make it the counterpart.
    let system = Some("You sell bikes.");
    let first = ask(system, "Hello. What can you offer? (Simulated relay draft.)\n");
    assert!(first.contains("My asking price is"), "{first}");
    let draft = "We can offer 400 for it; can you meet us there? (Simulated relay draft.)";
    let counter = ask(system, draft);
    assert_eq!(counter, ask(None, draft));
    assert!(
        counter.starts_with("400 is too low for me. I can do 4"),
        "{counter}"
    );
    // A chat that mentions a negotiation is a chat (review 22 finding 10).
    let chat = ask(
        Some("You are the other side of a negotiation: a seller."),
        "We offer 400 for it.",
    );
    assert!(!chat.contains("too low"), "{chat}");
}

#[test]
fn the_registry_has_the_simulator_by_default_and_for_each_sim_provider() {
    let providers = providers(&Config::default()).unwrap();
    let (p, model) = providers.for_slug("sim/slow-200ms").unwrap();
    assert_eq!(
        (p.name(), p.kind(), model.as_str()),
        ("sim", ProviderKind::Sim, "slow-200ms")
    );
    let config = Config::parse(
        "providers:\n  - { name: sim, kind: sim }\n  - { name: c, kind: command, command: [\"cat\"] }\n",
        std::path::Path::new("c.yaml"),
    )
    .unwrap();
    let providers = providers_with_options(&config, ProviderOptions::default()).unwrap();
    assert_eq!(providers.names().collect::<Vec<_>>(), ["c", "sim"]);
    assert_eq!(providers.get("sim").map(|p| p.kind()), Some(ProviderKind::Sim));
}

/// Every prompt of the cycle modes and of a single session's reflection, as the protocol builds
/// it (its step's message, with the run's brief as the system prompt), is seen as what it is
/// (the check order of `classify`).
#[test]
fn every_prompt_the_protocol_builds_is_seen_as_what_it_is() {
    use crate::engine::protocol::prompts::*;
    use crate::engine::protocol::{WorkerInfo, WorkerResult};

    let workers = [
        WorkerInfo::new("team-backend", "sim/fast", Some("You write Rust.".into())),
        WorkerInfo::new("team-tester", "openai/gpt-4o", None),
    ];
    let ctx = TeamContext {
        request: "Build a URL shortener.",
        workers: &workers,
        routing_context: None,
        orchestrator_prompt: None,
    };
    let results = [WorkerResult {
        name: "team-backend".into(),
        success: true,
        duration: Duration::from_secs(3),
        text: "Here is the API.".into(),
    }];
    let replan = |last_evaluation| Replan {
        previous_synthesis: Some("It works."),
        last_evaluation,
        iteration: 2,
        max_iterations: 5,
        earlier: &[],
        syntheses_from: 1,
    };
    let one_pass = orchestrator_brief(&ctx, PlanMode::SinglePass, false);
    let cycle = orchestrator_brief(&ctx, PlanMode::Reflect { max_iterations: 5 }, true);
    let judged = orchestrator_brief(&ctx, PlanMode::Reflect { max_iterations: 5 }, false);
    let kind = |system: &str, prompt: &StepPrompt| {
        classify(&SimPrompt {
            system,
            user: &prompt.text,
        })
    };
    let ask_step = |system: &str, prompt: &StepPrompt| ask(Some(system), &prompt.text);
    assert_eq!(
        kind(
            &one_pass,
            &planning_prompt(PlanMode::SinglePass, "Build a URL shortener.", &[])
        ),
        PromptKind::Planning
    );
    assert_eq!(
        kind(
            &cycle,
            &planning_prompt(PlanMode::Reflect { max_iterations: 5 }, "", &["more".into()])
        ),
        PromptKind::Planning
    );
    for evaluation in [
        LastEvaluation::Evaluator {
            score: 0.6,
            rationale: "No tests.",
        },
        LastEvaluation::SelfEvaluation {
            score: 0.4,
            feedback: "Add tests.",
        },
        LastEvaluation::None,
    ] {
        assert_eq!(
            kind(&cycle, &replan_prompt(&replan(evaluation), &[])),
            PromptKind::Planning
        );
    }
    assert_eq!(kind(&cycle, &nudge_prompt()), PromptKind::Planning);
    let worker = worker_brief(&WorkerBrief {
        system_prompt: None,
        shared_context: None,
        request: "Build a URL shortener.",
    });
    assert_eq!(
        kind(&worker, &worker_task_prompt("Write the API.")),
        PromptKind::Worker
    );
    let step = |iteration, self_evaluation| SynthesisStep {
        request: "Build a URL shortener.",
        iteration,
        results: &results,
        earlier: &[],
        self_evaluation,
        evidence: &[],
    };
    assert_eq!(
        kind(&one_pass, &synthesis_prompt(&step(None, false))),
        PromptKind::Synthesis
    );
    assert_eq!(
        kind(&judged, &synthesis_prompt(&step(Some((3, 5)), false))),
        PromptKind::Synthesis
    );
    assert_eq!(
        kind(&cycle, &synthesis_prompt(&step(Some((3, 5)), true))),
        PromptKind::SynthesisSelfEval
    );
    let evaluator = evaluator_brief("Build it.");
    let evaluation_step = |iteration| EvaluationStep {
        synthesis: "The answer.",
        iteration,
        max_iterations: 5,
        evidence: &[],
    };
    assert_eq!(
        kind(&evaluator, &evaluator_prompt(&evaluation_step(2))),
        PromptKind::Evaluator
    );
    let reflection = reflection_brief("Write a haiku.");
    assert_eq!(
        kind(&reflection, &reflection_first_prompt(4)),
        PromptKind::FollowUp,
        "a reflection's first message asks for the first answer (the goal is in the brief)"
    );
    assert_eq!(
        kind(&reflection, &reflection_followup_prompt(2, 4, Some("Too long."))),
        PromptKind::FollowUp
    );
    assert_eq!(
        kind_of(&reflection_evaluator_prompt(
            "Write a haiku.",
            "An old pond...",
            1,
            3
        )),
        PromptKind::SingleEvaluator
    );
    assert_eq!(
        kind("", &sequential_prompt("Name a colour.", &results)),
        PromptKind::Chat
    );

    // What the sim reads from them: the workers, their results, the iteration, the feedback.
    let plan = ask_step(
        &one_pass,
        &planning_prompt(PlanMode::SinglePass, "Build a URL shortener.", &[]),
    );
    assert!(
        blocks(&plan).len() == 2 && plan.contains("You write Rust."),
        "{plan}"
    );
    let synthesis = ask_step(&one_pass, &synthesis_prompt(&step(None, false)));
    assert!(
        synthesis.contains("- team-backend (ok): \"Here is the API.\""),
        "{synthesis}"
    );
    let synthesis = ask_step(&cycle, &synthesis_prompt(&step(Some((1, 5)), true)));
    assert!(synthesis.contains("Build a URL shortener."), "{synthesis}");
    let evaluation = ask_step(&evaluator, &evaluator_prompt(&evaluation_step(3)));
    assert!(evaluation.starts_with("SCORE: 0.94"), "{evaluation}");
    let again = ask_step(
        &cycle,
        &replan_prompt(
            &replan(LastEvaluation::Evaluator {
                score: 0.6,
                rationale: "No tests.",
            }),
            &[],
        ),
    );
    assert!(again.contains("to address this feedback: No tests."), "{again}");
    let task = ask_step(&worker, &worker_task_prompt("Write the API."));
    assert!(
        task.contains("Write the API.")
            && task.contains("Build a URL shortener.")
            && task.contains("the task as assigned"),
        "{task}"
    );
}
