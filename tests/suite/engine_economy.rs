//! Each thing is said once per request (issue 29): what each mode's requests carry, measured on
//! the fake server (see `economy_runs.rs`, the runs behind `cargo bench --bench prompt_bytes`).

use huddle::engine::session::chat_history;
use huddle::model::{MessageRole, Mode};

use super::economy_runs::{self, Sent, figures, measure, reflect};
use super::engine_fixture::{EVAL, Fixture, ORCH};
use super::fake_llm_server::Reply;

/// Every `## ` heading of the text huddle wrote into a request (system prompt and user
/// messages), with how often it stands there.
fn heading_counts(sent: &Sent) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for text in sent.request.prompt_texts() {
        for line in text.lines().filter(|l| l.starts_with("## ")) {
            match counts.iter_mut().find(|(h, _)| h == line) {
                Some((_, n)) => *n += 1,
                None => counts.push((line.to_string(), 1)),
            }
        }
    }
    counts
}

/// No request says a heading or a line of instructions twice.
fn said_once(sent: &[Sent]) {
    for (i, s) in sent.iter().enumerate() {
        let twice: Vec<_> = heading_counts(s).into_iter().filter(|(_, n)| *n > 1).collect();
        assert!(twice.is_empty(), "request {i} ({}): {twice:?}", s.model);
        assert!(
            s.repeated_lines.is_empty(),
            "request {i} ({}): {:?}",
            s.model,
            s.repeated_lines
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_reference_reflect_run_says_each_thing_once_within_the_goal() {
    let f = reflect(4, 33).await;
    let sent = measure(&f);
    let figures = figures("reflect", &sent);
    println!("{}", figures.row());
    assert_eq!(figures.all.count, 198);
    said_once(&sent);
    assert!(figures.all.mean <= 4096.0, "{}", figures.row());
    // The orchestrator's plans: iteration 30's request at most 3× iteration 3's.
    let plans: Vec<&Sent> = sent
        .iter()
        .filter(|s| s.role == "orchestrator")
        .step_by(2)
        .collect();
    let (third, thirtieth) = (plans[2].bytes, plans[29].bytes);
    let first_worker: Vec<usize> = sent
        .iter()
        .filter(|s| s.model == "w-w0")
        .map(|s| s.bytes)
        .collect();
    println!(
        "plan bytes: 1={} 3={third} 12={} 30={thirtieth} 33={}; worker w0 bytes: 1={} 33={}",
        plans[0].bytes, plans[11].bytes, plans[32].bytes, first_worker[0], first_worker[32]
    );
    assert!(
        thirtieth <= 3 * third,
        "plan 3: {third} bytes, plan 30: {thirtieth} bytes"
    );
    // The orchestrator has a system prompt: the brief.
    let system = &plans[0].request.prompt_texts()[0];
    assert!(system.contains("## Assignment format"), "{system}");
    // Every earlier iteration travels as one line (issue 29 review, finding 4): plan 30 still
    // has iteration 1's workers, score and reasons (its messages left the window long ago), and
    // a line for each iteration before the last (whose evaluation it is given in full).
    let plan30 = plans[29].request.prompt_texts().pop().unwrap_or_default();
    assert!(
        plan30.contains(
            "- Iteration 1 (w0, w1, w2, w3): score 0.40 from your self-evaluation: missing 1 notes"
        ),
        "{plan30}"
    );
    assert_eq!(plan30.matches("\n- Iteration ").count(), 28, "{plan30}");
    assert!(
        !plans[29]
            .request
            .prompt_texts()
            .iter()
            .any(|t| t.contains("Iteration 1 of 33")),
        "the first plan is no longer sent itself"
    );
}

/// The figures of every measured run (`cargo test ... print_every_run -- --ignored
/// --nocapture`; the bench prints the same from a release build).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
#[ignore]
async fn print_every_run() {
    super::economy_runs::all(None, |f| {
        println!("{}", f.row());
        if let Some(line) = &f.worst {
            println!("  e.g. {line}");
        }
    })
    .await;
}

/// A run's requests say each heading and each line of instructions once, and some of them
/// are later steps that carry earlier ones (the check would be empty otherwise).
fn check(f: &Fixture) -> Vec<Sent> {
    let sent = measure(f);
    said_once(&sent);
    assert!(
        sent.iter().any(|s| s.request.messages().len() >= 4),
        "a later step carries earlier ones"
    );
    sent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_judged_reflect_cycle_briefs_the_orchestrator_and_the_evaluator_once() {
    let f = economy_runs::reflect_judged(3, 6).await;
    let sent = check(&f);
    // The evaluator's system prompt says how to answer; its messages carry the answer to judge.
    let judged: Vec<&Sent> = sent.iter().filter(|s| s.model == EVAL).collect();
    assert_eq!(judged.len(), 6);
    let last = &judged[5].request;
    let texts = last.prompt_texts();
    assert!(
        texts[0].contains("## How to answer") && texts[0].contains("## Request"),
        "{texts:?}"
    );
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.contains("## Synthesis to evaluate"))
            .count(),
        1
    );
    // The sixth plan: iterations 1 to 4 one line each, with the evaluator's reasons; the fifth
    // in full.
    let plan6 = f.server.requests_for(ORCH)[10]
        .prompt_texts()
        .pop()
        .unwrap_or_default();
    assert!(plan6.starts_with("Iteration: 6 of 6"), "{plan6}");
    assert!(
        plan6.contains("- Iteration 1 (w0, w1, w2): score 0.50 from the evaluator: missing 1 notes"),
        "{plan6}"
    );
    assert_eq!(plan6.matches("\n- Iteration ").count(), 4, "{plan6}");
    assert!(plan6.contains("Rationale: missing 5 notes"), "{plan6}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn one_pass_modes_say_each_thing_once_across_runs_of_one_conversation() {
    check(&economy_runs::orchestrator(3, 4).await);
    check(&economy_runs::round(Mode::Sequential, 3, 4).await);
    check(&economy_runs::round(Mode::Broadcast, 2, 3).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_flow_says_each_thing_once_across_runs_and_still_routes() {
    let f = economy_runs::flow(4).await;
    let sent = check(&f);
    // The router's request is the user's alone; where it may route is in its system prompt.
    let router: Vec<&Sent> = sent.iter().filter(|s| s.model == "w-router").collect();
    assert_eq!(router.len(), 4, "one route per run");
    let texts = router[3].request.prompt_texts();
    assert!(texts[0].contains("## ROUTING") && texts[0].contains("Destinations: a, b"));
    assert_eq!(
        texts.last().map(String::as_str),
        Some("Question 4: how do we move the wiki, part 4?")
    );
    // Runs 1 and 3 went to `a`, 2 and 4 to `b`, each with its advisor's report.
    assert_eq!(f.server.requests_for("w-a").len(), 2);
    assert_eq!(f.server.requests_for("w-b").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_pipeline_says_each_thing_once_across_messages_and_still_hands_off() {
    let f = economy_runs::pipeline(5).await;
    check(&f);
    assert_eq!(f.server.requests_for("w-triage").len(), 1, "handed off once");
    assert_eq!(f.server.requests_for("w-handler").len(), 5, "and kept");
    let boss = f.sent("w-boss");
    assert!(
        boss.last().is_some_and(|b| b.contains("## Supervising")),
        "{boss:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn dispatch_says_the_catalog_and_the_shared_context_once() {
    let f = economy_runs::dispatch().await;
    check(&f);
    let logs = f.sent("w-logs");
    assert_eq!(logs.len(), 2, "two tasks");
    assert_eq!(
        logs[1].matches("The service is service-X.").count(),
        1,
        "{}",
        logs[1]
    );
    assert_eq!(logs[1].matches("## Task").count(), 1, "{}", logs[1]);
    assert!(
        logs[1].contains("find 1") && logs[1].contains("find 2"),
        "{}",
        logs[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_deliberation_says_how_the_team_works_once() {
    let f = economy_runs::deliberation().await;
    check(&f);
    let a = f.sent("w-a");
    assert!(a.len() >= 3, "{a:?}");
    let lines = |text: &str, line: &str| text.lines().filter(|l| *l == line).count();
    for sent in &a {
        assert_eq!(lines(sent, "## How this team works"), 1, "{sent}");
        assert!(lines(sent, "## Team broadcasts") <= 1, "{sent}");
    }
    // A broadcast's tool result is the fact alone: the brief says what follows it, and the
    // history keeps one result per turn (issue 29 re-review, 29-C).
    let results: Vec<String> = f
        .server
        .requests_for("w-a")
        .iter()
        .flat_map(|r| r.messages())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        !results.is_empty(),
        "later turns carry the earlier broadcasts' results"
    );
    for result in &results {
        assert!(result.len() < 48 && !result.contains("next turn"), "{result}");
    }
    let last = a.last().map(String::as_str).unwrap_or_default();
    assert!(
        last.contains("view b 1 notes"),
        "earlier broadcasts are kept: {last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn relays_and_a_sessions_reflection_say_each_thing_once() {
    check(&economy_runs::relay(6).await);
    let f = economy_runs::single_reflection(6).await;
    let sent = check(&f);
    let solo: Vec<&Sent> = sent.iter().filter(|s| s.model == "w-solo").collect();
    let texts = solo[5].request.prompt_texts();
    assert!(
        texts[0].contains("[[REFLECTION_COMPLETE]]"),
        "the rules in the system prompt"
    );
    assert_eq!(
        texts.iter().filter(|t| t.contains(economy_runs::REQUEST)).count(),
        1,
        "the goal said once: {texts:?}"
    );
}

/// What the transcript keeps: every prompt as sent, its compact form (what later requests
/// carry), and the instructions added to the system prompt, on the first prompt they were
/// sent with.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_transcript_keeps_what_was_sent_and_what_later_requests_carry() {
    let f = reflect(2, 5).await;
    let id = f.session_id("t-orchestrator");
    let messages = f.engine.load_transcript(&id).expect("transcript").messages;
    let prompts: Vec<_> = messages.iter().filter(|m| m.role == MessageRole::User).collect();
    assert_eq!(prompts.len(), 10, "a plan and a synthesis per iteration");
    let requests = f.server.requests_for(ORCH);
    for (prompt, request) in prompts.iter().zip(&requests) {
        assert_eq!(
            prompt.text,
            request.prompt_texts().last().cloned().unwrap_or_default(),
            "the transcript has the prompt as sent"
        );
        assert!(prompt.compact.is_some(), "{prompt:?}");
    }
    let brief = prompts[0].instructions.as_deref().unwrap_or_default();
    assert!(brief.contains("## Assignment format"), "{brief}");
    assert_eq!(brief, requests[0].prompt_texts()[0], "the system prompt as sent");
    assert!(!brief.is_empty());
    assert!(
        prompts[1..].iter().all(|p| p.instructions.is_none()),
        "recorded once: the same brief went with every later prompt"
    );
    // Read back (a restart), the conversation is what the last request carried before its
    // newest message.
    let history = chat_history(&messages);
    let last = requests.last().expect("requests").messages();
    let carried: Vec<String> = last[1..last.len() - 1]
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    // The history read back ends with the last prompt (its compact form) and its answer.
    let read_back: Vec<String> = history[history.len() - 2 - carried.len()..history.len() - 2]
        .iter()
        .map(|m| m.content.to_string())
        .collect();
    assert_eq!(read_back, carried);
}

/// `u` (or `U`) on a team member's step asks it again outside the run that asked it: it is
/// sent the instructions it was sent then (its brief is not in the conversation); so is a
/// plain chat after it (issue 29 review, finding 3: the request and the team are in the brief
/// only).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_step_asked_again_is_sent_the_instructions_it_was_sent() {
    let f = reflect(2, 2).await;
    let id = f.session_id("t-w0");
    f.engine.flush().expect("flush");
    let messages = f.engine.load_transcript(&id).expect("transcript").messages;
    let last = messages
        .iter()
        .rev()
        .find(|m| m.role == MessageRole::User)
        .expect("a prompt")
        .clone();
    let from = last.id.clone().expect("an id");
    f.engine.supersede(&id, &from, "regenerated").expect("idle");
    f.engine
        .start_chat(&id, last.text.clone(), None)
        .expect("chat")
        .await;
    f.engine
        .start_chat(&id, "Thanks.".into(), None)
        .expect("chat")
        .await;
    let sent = f.sent("w-w0");
    let n = sent.len();
    assert_eq!(n, 4, "two steps, the step again, a chat");
    let brief = "## Original request";
    assert!(sent[1].contains(brief), "{}", sent[1]);
    assert_eq!(
        sent[2].matches(brief).count(),
        1,
        "asked again with its brief: {}",
        sent[2]
    );
    assert_eq!(
        sent[3].matches(brief).count(),
        1,
        "a chat is sent the brief, once: {}",
        sent[3]
    );
    assert_eq!(sent[3].matches(economy_runs::REQUEST).count(), 1, "{}", sent[3]);
}

/// A chat with the orchestrator after its reflect run is sent the run's brief: the request,
/// the workers and the format, once (issue 29 review, finding 3), and no brief again when
/// the session is chatted with a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_chat_after_a_run_knows_the_runs_request_and_team() {
    let f = reflect(2, 3).await;
    let id = f.session_id("t-orchestrator");
    f.server.script(
        ORCH,
        vec![Reply::text("Because w0 knows the wiki."), Reply::text("Yes.")],
    );
    for question in ["Why did you assign w0 the first task?", "Sure?"] {
        f.engine
            .start_chat(&id, question.into(), None)
            .expect("chat")
            .await;
    }
    let requests = f.server.requests_for(ORCH);
    for chat in &requests[6..8] {
        let texts = chat.prompt_texts();
        let all = texts.join("\n");
        assert_eq!(all.matches(economy_runs::REQUEST).count(), 1, "{texts:?}");
        assert!(
            texts[0].contains("## Assignment format") && texts[0].contains("`w1`"),
            "{texts:?}"
        );
        assert!(economy_runs::repeated_lines(chat).is_empty(), "{texts:?}");
    }
    // Recorded once: the chat was sent what the last prompt was sent.
    f.engine.flush().expect("flush");
    let messages = f.engine.load_transcript(&id).expect("transcript").messages;
    let chats: Vec<_> = messages.iter().filter(|m| m.direct).collect();
    assert_eq!(chats.len(), 2);
    assert!(chats.iter().all(|m| m.instructions.is_none()), "{chats:?}");
}

/// A session's reflection longer than the history sent (its oldest messages are no longer
/// sent) still has its goal in every request, once (issue 29 review, finding 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_long_reflection_keeps_its_goal_in_every_request() {
    let f = economy_runs::single_reflection(24).await;
    let sent = check(&f);
    let solo: Vec<&Sent> = sent.iter().filter(|s| s.model == "w-solo").collect();
    assert_eq!(solo.len(), 24);
    for (i, s) in solo.iter().enumerate() {
        let texts = s.request.prompt_texts();
        assert_eq!(
            texts
                .iter()
                .map(|t| t.matches(economy_runs::REQUEST).count())
                .sum::<usize>(),
            1,
            "request {}: the goal once: {texts:?}",
            i + 1
        );
    }
    // The oldest messages were dropped: the check above saw requests without them.
    let last = solo[23].request.prompt_texts();
    assert!(
        !last.iter().any(|t| t.contains("Iteration 1 of 24")),
        "the first exchange is no longer sent: {last:?}"
    );
}

/// With `memory: conversation`, a later run's orchestrator is still told what the user asked
/// in the earlier runs (every line of it), each request once (issue 29 review, finding 2), and
/// so are its workers, whose own conversations hold only their tasks (re-review, 29-E).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_orchestrator_in_a_conversation_keeps_the_earlier_requests() {
    let first = "Review this config for the wiki host:\nport: 8080\ntls: off\nbackup: weekly\nWhat is risky?";
    let second = "And which of those settings should we change first?";
    let f = economy_runs::orchestrator_asked(2, &[first.to_string(), second.to_string()]).await;
    check(&f);
    let plans: Vec<String> = f.sent(ORCH).into_iter().step_by(2).collect();
    assert_eq!(plans.len(), 2, "a plan per run");
    // The whole earlier request (not only its first line, which labels the results kept).
    assert_eq!(plans[1].matches(first).count(), 1, "{}", plans[1]);
    assert_eq!(plans[1].matches("tls: off").count(), 1, "{}", plans[1]);
    assert_eq!(plans[1].matches(second).count(), 1, "{}", plans[1]);
    // Within a run the request is said once too (its synthesis has it from the plan kept).
    let synthesis = &f.sent(ORCH)[1];
    assert_eq!(synthesis.matches("tls: off").count(), 1, "{synthesis}");
    // Each worker: run 1 told the first request; run 2 both, each once, the first numbered.
    for worker in ["w-w0", "w-w1"] {
        let sent = f.sent(worker);
        assert_eq!(sent.len(), 2, "a task per run");
        assert_eq!(sent[0].matches(first).count(), 1, "{}", sent[0]);
        assert_eq!(sent[1].matches(second).count(), 1, "{}", sent[1]);
        assert_eq!(sent[1].matches(&format!("1. {first}")).count(), 1, "{}", sent[1]);
        assert_eq!(sent[1].matches("## Earlier requests").count(), 1, "{}", sent[1]);
    }
}

/// With `memory: conversation`, every request of a later reflect cycle is told what the earlier
/// run asked (every line of it), each request once, though the window no longer sends the
/// earlier run's first plan (issue 29 re-review, 29-A): its plans, its syntheses and its
/// workers' tasks (third review, 29-E).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_reflect_cycle_in_a_conversation_keeps_the_earlier_requests() {
    let first = "FIRSTREQ Review this config for the wiki host:\nport: 8080\ntls: off\nWhat is risky?";
    let second = "And which of those settings should we change first?";
    let f = economy_runs::reflect_asked(2, 8, &[first.to_string(), second.to_string()]).await;
    check(&f);
    let requests = f.server.requests_for(ORCH);
    assert_eq!(
        requests.len(),
        32,
        "a plan and a synthesis per iteration, 8 per run"
    );
    let told = |what: &str, k: usize, body: &str, run: usize| {
        let asked = if run == 1 { first } else { second };
        assert_eq!(body.matches(asked).count(), 1, "{what} {k}: {body}");
        // The first request: in its own run's brief, in every request of the second run.
        assert_eq!(body.matches(first).count(), 1, "{what} {k}: {body}");
        assert_eq!(body.matches("tls: off").count(), 1, "{what} {k}");
    };
    for (k, request) in requests.iter().enumerate() {
        told("request", k, &request.prompt_texts().join("\n"), k / 16 + 1);
    }
    for worker in ["w-w0", "w-w1"] {
        let sent = f.sent(worker);
        assert_eq!(sent.len(), 16, "a task per iteration");
        for (k, body) in sent.iter().enumerate() {
            told(worker, k, body, k / 8 + 1);
        }
    }
    // The second run's kept plans name their run, so the earlier run's are told apart.
    let last = requests[31].prompt_texts().join("\n");
    assert!(last.contains("Run 2, iteration 8 of 8: plan again"), "{last}");
}

/// The evaluator of a later reflect cycle, and a chat with the orchestrator after it, are told
/// what the earlier run asked, once (third review, 29-E: the evaluator judged a follow-up
/// without it).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_later_cycles_evaluator_and_chat_know_the_earlier_request() {
    let first = "FIRSTREQ Review this config:\ntls: off\nWhat is risky?";
    let second = "And which of those settings should we change first?";
    let requests = [first.to_string(), second.to_string()];
    let f = Box::pin(economy_runs::reflect_conversation(1, 2, &requests, true)).await;
    check(&f);
    let judged = f.sent(EVAL);
    assert_eq!(judged.len(), 4, "an evaluation per iteration");
    for (k, body) in judged.iter().enumerate() {
        assert_eq!(body.matches(first).count(), 1, "evaluation {k}: {body}");
        let asked = if k < 2 { first } else { second };
        assert_eq!(body.matches(asked).count(), 1, "evaluation {k}: {body}");
    }
    let id = f.session_id("t-orchestrator");
    f.server.script(ORCH, vec![Reply::text("Because of tls.")]);
    f.engine
        .start_chat(&id, "Why that order?".into(), None)
        .expect("chat")
        .await;
    let chat = f.sent(ORCH).pop().unwrap_or_default();
    assert_eq!(chat.matches(first).count(), 1, "{chat}");
    assert_eq!(chat.matches(second).count(), 1, "{chat}");
}

/// A later run is told as many earlier requests as its window can still send runs of, each
/// numbered as its kept plans name their run (third review, 29-F: only the newest three, and
/// the oldest messages sent read as answers to the wrong one).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_later_run_is_told_every_earlier_request_its_window_sends() {
    let requests: Vec<String> = (1..=7).map(|n| format!("REQ{n} what about part {n}?")).collect();
    let f = Box::pin(economy_runs::reflect_asked(1, 1, &requests)).await;
    check(&f);
    let last = f.server.requests_for(ORCH)[12].prompt_texts();
    let body = last.join("\n");
    for n in 1..=6 {
        assert_eq!(
            body.matches(&format!("{n}. REQ{n} what")).count(),
            1,
            "request {n}: {body}"
        );
        assert_eq!(
            body.matches(&format!("Run {n}, iteration 1 of 1: the first plan."))
                .count(),
            1,
            "run {n}'s plan: {body}"
        );
    }
    assert_eq!(body.matches("REQ7").count(), 1, "{body}");
}

/// A new conversation for a team starts again from no earlier request: the next run's briefs
/// say none (and the run after it only that one).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_new_conversation_forgets_the_earlier_requests() {
    let requests: Vec<String> = (1..=3).map(|n| format!("REQ{n} what about part {n}?")).collect();
    let f = Box::pin(economy_runs::reflect_asked(1, 1, &requests[..2])).await;
    let members: Vec<String> = ["t-orchestrator", "t-w0"]
        .iter()
        .map(|n| f.session_id(n))
        .collect();
    f.engine.new_conversation(&members).expect("new conversation");
    f.server.script(
        ORCH,
        vec![
            Reply::text("@worker:t-w0\nDo it.\n@end"),
            Reply::text("Done.\n[[NEEDS_ITERATION]]\nMore."),
        ],
    );
    f.server.script("w-w0", vec![Reply::text("did it")]);
    f.run(&requests[2]).await;
    let sent = f.sent(ORCH);
    assert_eq!(sent.len(), 6, "{sent:?}");
    for body in sent[4..].iter().chain(f.sent("w-w0")[2..].iter()) {
        assert!(!body.contains("REQ1") && !body.contains("REQ2"), "{body}");
        assert!(!body.contains("## Earlier requests"), "{body}");
    }
}

/// A self-evaluation's reasons are in every later plan once: in the ledger, or in the
/// synthesis the window still sends (issue 29 re-review, 29-B: they were lost for the
/// iterations just out of the window).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn every_plan_has_each_earlier_iterations_reasons_once() {
    let f = reflect(2, 20).await;
    let plans: Vec<String> = f
        .server
        .requests_for(ORCH)
        .iter()
        .step_by(2)
        .map(|r| r.prompt_texts().join("\n"))
        .collect();
    assert_eq!(plans.len(), 20);
    for (k, plan) in plans.iter().enumerate() {
        for j in 1..=k as u32 {
            let reasons = economy_runs::words("missing", j);
            assert_eq!(
                plan.matches(&reasons).count(),
                1,
                "plan {}: reasons of {j}\n{plan}",
                k + 1
            );
        }
    }
}
