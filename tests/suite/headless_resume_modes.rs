//! Every mode resumes after a SIGKILL: `huddle run` on the scripted fake server is killed right
//! after the first turn it reports finished, `huddle run --group G --resume` completes with the
//! right answer, and the server's log shows that no turn that had finished was asked again.
//! Each member has a model of its own, so the log says whose turn each request was.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::fake_llm_server::{FakeLlm, Reply};
use super::headless::{team_made_by_run, text};

/// A reply that streams for a few seconds: the kill lands while it runs.
fn slow(answer: &str) -> Reply {
    Reply::text(answer).chunk_delay(Duration::from_millis(900))
}

/// A home whose config points provider `fake` at the server, with `preset` as a user preset.
fn home_with(llm: &FakeLlm, preset: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("home");
    std::fs::write(
        home.path().join("config.yaml"),
        format!(
            "default_model: fake/default\nproviders:\n  - {{ name: fake, kind: openai, base_url: \"{}\" }}\n",
            llm.openai_base()
        ),
    )
    .expect("config");
    std::fs::create_dir_all(home.path().join("presets")).expect("presets dir");
    std::fs::write(home.path().join("presets").join("case.yaml"), preset).expect("preset");
    home
}

/// Runs `huddle run --preset <preset> --events <prompt>` and kills it (SIGKILL) once `member`
/// reported a finished turn and the server has had a request for `next` (the turn the kill cuts
/// off); returns the events printed before the kill.
async fn kill_after_turn_of(
    llm: &FakeLlm,
    home: &Path,
    preset: &str,
    prompt: &str,
    member: &str,
    next: (&str, usize),
) -> Vec<Value> {
    let suffix = format!("-{member}");
    kill_after_turn(
        llm,
        home,
        &["run", "--preset", preset, "--events", prompt],
        &|session| session.ends_with(&suffix),
        next,
    )
    .await
}

/// Runs `huddle <args>` (with `--events`) and kills it (SIGKILL) once a session `whose` says
/// is its reported a finished turn and the server has had `next.1` requests for model
/// `next.0`; returns the events printed before the kill.
async fn kill_after_turn(
    llm: &FakeLlm,
    home: &Path,
    args: &[&str],
    whose: &dyn Fn(&str) -> bool,
    next: (&str, usize),
) -> Vec<Value> {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(args)
        .env("HUDDLE_HOME", home)
        .current_dir(home)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start huddle");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut events: Vec<Value> = Vec::new();
    let finished = |events: &[Value]| {
        events.iter().any(|e| {
            e["event"] == "turn_finished" && e["success"] == true && e["session"].as_str().is_some_and(whose)
        })
    };
    let read = async {
        loop {
            if finished(&events) && llm.requests_for(next.0).len() >= next.1 {
                return true;
            }
            tokio::select! {
                line = lines.next_line() => match line {
                    Ok(Some(line)) => events.push(serde_json::from_str(&line).expect("NDJSON")),
                    _ => return false,
                },
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
    };
    let found = tokio::time::timeout(Duration::from_secs(120), read)
        .await
        .unwrap_or(false);
    // SIGKILL: nothing of huddle's own runs after this.
    let _ = child.start_kill();
    let _ = child.wait().await;
    assert!(found, "no turn finished: {events:#?}");
    assert!(
        !events.iter().any(|e| e["event"] == "run_ended"),
        "killed before the end"
    );
    events
}

/// `huddle <args>` on `home`, waited for.
async fn huddle_in(home: &Path, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(args)
        .env("HUDDLE_HOME", home)
        .current_dir(home)
        .output()
        .await
        .expect("huddle")
}

/// `huddle run --group <team> --resume` (with `extra` flags): its exit code, stdout and stderr.
async fn resume(home: &Path, preset: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let team = team_made_by_run(home, preset);
    let mut args = vec!["run", "--group", team.as_str(), "--resume"];
    args.extend_from_slice(extra);
    let out = huddle_in(home, &args).await;
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// The last user message of every request the server got for `model`.
fn asked(llm: &FakeLlm, model: &str) -> Vec<String> {
    llm.requests_for(model)
        .iter()
        .map(|r| {
            r.messages()
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect()
}

/// No two requests for `model` carried the same messages (no finished turn was asked again).
fn never_asked_twice(llm: &FakeLlm, model: &str) {
    let bodies: Vec<Value> = llm
        .requests_for(model)
        .iter()
        .map(|r| r.json()["messages"].clone())
        .collect();
    for (i, b) in bodies.iter().enumerate() {
        assert!(
            !bodies[..i].contains(b),
            "{model} was asked the same thing twice: {b}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn broadcast_resumes_with_the_members_that_had_not_answered() {
    let llm = FakeLlm::start().await;
    llm.script("a", vec![Reply::text("Alpha answer")]);
    llm.script("b", vec![slow("Beta slow answer"), Reply::text("Beta answer")]);
    let preset = "name: Case\nmode: broadcast\nworkers:\n  - { name: a, model: fake/a }\n  - { name: b, model: fake/b }\n";
    let home = home_with(&llm, preset);
    kill_after_turn_of(&llm, home.path(), "Case", "Say hello", "a", ("b", 1)).await;
    let (code, out, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("Alpha answer") && out.contains("Beta answer"),
        "{out}"
    );
    assert_eq!(llm.requests_for("a").len(), 1, "a's answer came from disk");
    assert_eq!(llm.requests_for("b").len(), 2, "b was cut off and asked again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn sequential_resumes_at_the_member_whose_turn_it_was() {
    let llm = FakeLlm::start().await;
    llm.script("a", vec![Reply::text("First words")]);
    llm.script("b", vec![slow("Second slow words"), Reply::text("Second words")]);
    let preset = "name: Case\nmode: sequential\nworkers:\n  - { name: a, model: fake/a }\n  - { name: b, model: fake/b }\n";
    let home = home_with(&llm, preset);
    kill_after_turn_of(&llm, home.path(), "Case", "Write a line", "a", ("b", 1)).await;
    let (code, out, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "Second words");
    assert_eq!(llm.requests_for("a").len(), 1);
    let b = asked(&llm, "b");
    assert_eq!(b.len(), 2);
    assert!(b[1].contains("First words"), "b saw a's answer: {}", b[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn orchestrator_resumes_with_the_workers_that_had_not_answered() {
    let llm = FakeLlm::start().await;
    llm.script(
        "o",
        vec![
            Reply::text("@worker:a look at A\n@worker:b look at B"),
            Reply::text("Synthesis of both"),
        ],
    );
    llm.script("a", vec![Reply::text("A found")]);
    llm.script("b", vec![slow("B slow finding"), Reply::text("B found")]);
    let preset = "name: Case\nmode: orchestrator\norchestrator: { model: fake/o }\nworkers:\n  - { name: a, model: fake/a }\n  - { name: b, model: fake/b }\n";
    let home = home_with(&llm, preset);
    kill_after_turn_of(&llm, home.path(), "Case", "Investigate", "a", ("b", 1)).await;
    let (code, out, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "Synthesis of both");
    let o = asked(&llm, "o");
    assert_eq!(o.len(), 2, "the plan came from disk: {o:#?}");
    assert!(o[1].contains("A found") && o[1].contains("B found"), "{}", o[1]);
    assert_eq!(llm.requests_for("a").len(), 1);
    never_asked_twice(&llm, "o");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_reflect_cycle_resumes_its_interrupted_iteration_without_asking_its_finished_turns_again() {
    let llm = FakeLlm::start().await;
    llm.script(
        "o",
        vec![
            Reply::text("@worker:a look at A\n@worker:b look at B"),
            Reply::text("Synthesis\n[[GROUP_REFLECT_COMPLETE]]"),
        ],
    );
    llm.script("a", vec![Reply::text("A found")]);
    llm.script("b", vec![slow("B slow finding"), Reply::text("B found")]);
    let preset = "name: Case\nmode: orchestrator_reflect\nmax_iterations: 2\norchestrator: { model: fake/o }\nworkers:\n  - { name: a, model: fake/a }\n  - { name: b, model: fake/b }\n";
    let home = home_with(&llm, preset);
    kill_after_turn_of(&llm, home.path(), "Case", "Investigate", "a", ("b", 1)).await;
    let (code, out, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Synthesis"), "{out}");
    assert_eq!(asked(&llm, "o").len(), 2, "the plan came from disk");
    assert_eq!(llm.requests_for("a").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_relay_resumes_at_its_state() {
    let llm = FakeLlm::start().await;
    llm.script(
        "d",
        vec![
            Reply::text("Offer one hundred"),
            slow("We agree then"),
            Reply::text("Deal at ninety\n[[RELAY_COMPLETE]]"),
        ],
    );
    llm.script("c", vec![Reply::text("Counter: eighty")]);
    let preset = "name: Case\nmode: relay\nrelay:\n  driver: d\n  counterpart: c\n  approval: full_auto\n  max_turns: 4\nworkers:\n  - { name: d, model: fake/d }\n  - { name: c, model: fake/c }\n";
    let home = home_with(&llm, preset);
    kill_after_turn_of(&llm, home.path(), "Case", "Buy the car", "c", ("d", 2)).await;
    let (code, out, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "Deal at ninety");
    let d = asked(&llm, "d");
    assert_eq!(d.len(), 3, "the first draft came from disk: {d:#?}");
    assert_eq!(
        llm.requests_for("c").len(),
        1,
        "the counterpart's answer came from disk"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_flow_resumes_at_the_member_that_held_it() {
    let llm = FakeLlm::start().await;
    llm.script("e", vec![Reply::text("Entry notes")]);
    llm.script("f", vec![slow("Final slow word"), Reply::text("Final word")]);
    let preset = "name: Case\nmode: flow\nentry: e\nworkers:\n  - { name: e, model: fake/e, handoff: f }\n  - { name: f, model: fake/f }\n";
    let home = home_with(&llm, preset);
    kill_after_turn_of(&llm, home.path(), "Case", "Fix the printer", "e", ("f", 1)).await;
    let (code, out, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "Final word");
    assert_eq!(llm.requests_for("e").len(), 1);
    assert!(asked(&llm, "f").iter().all(|p| p.contains("Entry notes")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_pipeline_resumes_at_its_phase_with_the_handoff_it_had() {
    let llm = FakeLlm::start().await;
    let home = killed_pipeline(&llm).await;
    let (code, out, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "Handled: clear the tray");
    assert_pipeline_resumed(&llm);
}

/// A pipeline (intake `t` hands off to handling `h`) killed while `h` answers; its home.
pub(super) async fn killed_pipeline(llm: &FakeLlm) -> tempfile::TempDir {
    llm.script(
        "t",
        vec![Reply::tool_call(
            "call_1",
            "handoff_conversation",
            r#"{"target":"h","reason":"ready","summary":"the printer jams"}"#,
        )],
    );
    llm.script(
        "h",
        vec![slow("Handled slowly"), Reply::text("Handled: clear the tray")],
    );
    let preset = "name: Case\nmode: pipeline\nworkers:\n  - { name: t, model: fake/t }\n  - { name: h, model: fake/h }\nstages:\n  - { phase: intake, member: t, next: handling }\n  - { phase: handling, member: h }\n";
    let home = home_with(llm, preset);
    kill_after_turn_of(llm, home.path(), "Case", "My printer jams", "t", ("h", 1)).await;
    home
}

/// The killed pipeline was resumed at its phase: the handoff came from disk, `h` was asked
/// again with it.
pub(super) fn assert_pipeline_resumed(llm: &FakeLlm) {
    assert_eq!(llm.requests_for("t").len(), 1, "the handoff came from disk");
    let h = asked(llm, "h");
    assert_eq!(h.len(), 2, "h was cut off and asked again: {h:#?}");
    assert!(h.iter().all(|p| p.contains("the printer jams")), "{h:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_dispatch_run_pushes_finished_results_from_disk_and_dispatches_the_rest_again() {
    let llm = FakeLlm::start().await;
    let home = killed_dispatch(&llm).await;
    let (code, out, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    // Its answer is its own (a reply it gave once b's result was in), never huddle's stand-in.
    let answer = out.trim();
    assert!(answer.starts_with("Step") || answer == "All checked", "{out}");
    assert_dispatch_resumed(&llm);
}

/// A dispatch run whose sub-agent met a limit it could not wait out (review s12 F1): the run
/// ends `rate_limited` (exit 8) and resumable; resumed, that sub-agent is dispatched again (its
/// turn was cut short by the limit, not failed) and the orchestrator hears its answer, never a
/// failure it was not told of before.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_sub_agent_that_met_a_limit_is_dispatched_again_when_the_run_resumes() {
    // A rate limit (429) and an overload (529) alike (review s12c: 529 was told as a failure).
    for status in [429, 529] {
        sub_agent_meets_a_limit_and_the_run_resumes(status).await;
    }
}

async fn sub_agent_meets_a_limit_and_the_run_resumes(status: u16) {
    let llm = FakeLlm::start().await;
    // a first, b once a's result is in: b meets its limit with a's result told.
    llm.script(
        "o",
        vec![
            Reply::tool_call("c1", "dispatch_agent", r#"{"name":"a","task":"check A"}"#),
            Reply::text("Waiting for a"),
            Reply::tool_call("c2", "dispatch_agent", r#"{"name":"b","task":"check B"}"#),
            Reply::text("Waiting for b"),
            // Resumed: b is dispatched again, and this is a wait for it.
            Reply::text("Waiting for b again"),
        ],
    );
    llm.set_default(Reply::text("All checked"));
    llm.script("a", vec![Reply::text("A is fine")]);
    llm.script(
        "b",
        vec![
            Reply::status(status).retry_after("3600"),
            Reply::text("B is fine"),
        ],
    );
    let preset = "name: Case\nmode: dispatch\norchestrator: { model: fake/o }\nworkers:\n  - { name: a, model: fake/a }\n  - { name: b, model: fake/b }\n";
    let home = home_with(&llm, preset);
    let out = huddle_in(
        home.path(),
        &[
            "run",
            "--preset",
            "Case",
            "--max-limit-wait",
            "0",
            "Check everything",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(8), "{}", text(&out.stderr));
    assert_eq!(llm.requests_for("b").len(), 1);
    // No orchestrator turn was told that b failed.
    for r in llm.requests_for("o") {
        let said = r.prompt_texts().join("\n");
        assert!(!said.contains("[Sub-agent failed] b"), "{said}");
    }
    let (code, out, err) = resume(home.path(), "Case", &["--max-limit-wait", "0"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(llm.requests_for("a").len(), 1, "a's result came from disk");
    assert_eq!(llm.requests_for("b").len(), 2, "b was dispatched again");
    let last = llm.requests_for("o").last().expect("o").prompt_texts().join("\n");
    assert!(last.contains("B is fine"), "{last}");
    assert!(!last.contains("[Sub-agent failed] b"), "{last}");
    assert!(out.contains("All checked"), "{out}");
}

/// A dispatch run killed while a clarification (`ask_agent`) was being answered (review s12 F2):
/// resumed, the question is asked again (it was neither asked again nor reported, and the
/// orchestrator's wait for it could become the run's answer), and its answer reaches the
/// orchestrator.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_clarification_cut_short_is_asked_again_when_the_run_resumes() {
    let llm = FakeLlm::start().await;
    llm.script(
        "o",
        vec![
            Reply::tool_call("c1", "dispatch_agent", r#"{"name":"a","task":"check A"}"#),
            Reply::text("Waiting for a"),
            Reply::tool_call(
                "c2",
                "ask_agent",
                r#"{"execution_id":"exec-2","question":"Which disk?"}"#,
            ),
        ],
    );
    // Resumed, the answer asked again may come before the orchestrator's first call or after
    // it (the two run at once; CI saw both): it waits until it has been told the answer, then
    // answers, whichever came first (a reply by its place in a script would be a wait or the
    // answer depending on that order).
    llm.set_default(Reply::text("Waiting for the answer"));
    llm.answer_when("o", "Disk two", Reply::text("All checked"));
    llm.script(
        "a",
        vec![
            Reply::text("A is fine"),
            slow("Disk two, slowly"),
            Reply::text("Disk two"),
        ],
    );
    let preset = "name: Case\nmode: dispatch\norchestrator: { model: fake/o }\nworkers:\n  - { name: a, model: fake/a }\n";
    let home = home_with(&llm, preset);
    kill_after_turn_of(&llm, home.path(), "Case", "Check everything", "a", ("a", 2)).await;
    let (code, out, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(llm.requests_for("a").len(), 3, "the question was asked again");
    let last = llm.requests_for("o").last().expect("o").prompt_texts().join("\n");
    assert!(last.contains("Disk two"), "{last}");
    assert_eq!(out.trim(), "All checked", "{out}");
    never_asked_twice(&llm, "o");
}

/// A dispatch run (orchestrator `o` dispatches `a` and `b`) killed once `a` finished while `b`
/// answers; its home.
pub(super) async fn killed_dispatch(llm: &FakeLlm) -> tempfile::TempDir {
    llm.script(
        "o",
        vec![
            Reply::tool_calls(&[
                ("c1", "dispatch_agent", r#"{"name":"a","task":"check A"}"#),
                ("c2", "dispatch_agent", r#"{"name":"b","task":"check B"}"#),
            ]),
            Reply::text("Step one"),
            Reply::text("Step two"),
            Reply::text("Step three"),
        ],
    );
    llm.set_default(Reply::text("All checked"));
    llm.script("a", vec![Reply::text("A is fine")]);
    // b is slow again when dispatched again: the orchestrator's first resumed turn is a wait.
    llm.script("b", vec![slow("B slow check"), slow("B is fine")]);
    let preset = "name: Case\nmode: dispatch\norchestrator: { model: fake/o }\nworkers:\n  - { name: a, model: fake/a }\n  - { name: b, model: fake/b }\n";
    let home = home_with(llm, preset);
    kill_after_turn_of(llm, home.path(), "Case", "Check everything", "a", ("b", 1)).await;
    home
}

/// The killed dispatch run was resumed: `a`'s result came from disk, `b` was dispatched again,
/// the orchestrator was never asked the same thing twice and heard both results.
pub(super) fn assert_dispatch_resumed(llm: &FakeLlm) {
    assert_eq!(llm.requests_for("a").len(), 1, "a's result came from disk");
    assert_eq!(llm.requests_for("b").len(), 2, "b was dispatched again");
    never_asked_twice(llm, "o");
    // The orchestrator heard a's result (pushed then, or from disk now) and b's.
    let last = llm.requests_for("o").last().expect("o").prompt_texts().join("\n");
    assert!(last.contains("A is fine") && last.contains("B is fine"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_team_deliberation_resumes_with_its_broadcast_log() {
    let llm = FakeLlm::start().await;
    llm.script(
        "a",
        vec![Reply::tool_call(
            "c1",
            "team_broadcast",
            r#"{"message":"Alpha thinks yes","final":true}"#,
        )],
    );
    llm.script(
        "b",
        vec![
            slow("thinking slowly"),
            Reply::tool_call(
                "c2",
                "team_broadcast",
                r#"{"message":"Beta thinks no","final":true}"#,
            ),
        ],
    );
    llm.script("s", vec![Reply::text("Decision: yes, with care")]);
    let preset = "name: Case\nmode: team\norchestrator: { model: fake/s }\nworkers:\n  - { name: a, model: fake/a }\n  - { name: b, model: fake/b }\n";
    let home = home_with(&llm, preset);
    kill_after_turn_of(&llm, home.path(), "Case", "Should we ship?", "a", ("b", 1)).await;
    let (code, out, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "Decision: yes, with care");
    assert_eq!(llm.requests_for("a").len(), 1, "a's broadcast came from disk");
    let s = asked(&llm, "s");
    assert_eq!(s.len(), 1);
    assert!(
        s[0].contains("Alpha thinks yes") && s[0].contains("Beta thinks no"),
        "{}",
        s[0]
    );
}

/// A single session's reflection made by `huddle run --max-iterations N` (a one-shot session),
/// killed during its second iteration, resumes headless with `huddle run --session S --resume`
/// (stopped by SIGTERM on the way, it says how to resume it again): the first iteration's
/// answer comes from disk, the second is asked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_session_s_reflection_resumes_from_the_command_line() {
    let llm = FakeLlm::start().await;
    llm.script(
        "solo",
        vec![
            Reply::text("Draft one"),
            slow("Draft two, slowly"),
            slow("Draft two, slowly again"),
            Reply::text("Final draft\n[[REFLECTION_COMPLETE]]"),
        ],
    );
    let home = home_with(&llm, "name: Unused\nmode: broadcast\nworkers:\n  - { name: a }\n");
    let events = kill_after_turn(
        &llm,
        home.path(),
        &[
            "run",
            "--model",
            "fake/solo",
            "--max-iterations",
            "3",
            "--events",
            "Explain resumption",
        ],
        &|_| true,
        ("solo", 2),
    )
    .await;
    let session = events
        .iter()
        .find(|e| e["event"] == "turn_finished")
        .and_then(|e| e["session"].as_str())
        .expect("the session's name")
        .to_string();
    // Without --resume, a new run over it is refused and says how to resume it.
    let refused = huddle_in(home.path(), &["run", "--session", &session, "Something else"]).await;
    assert_eq!(refused.status.code(), Some(2));
    let err = text(&refused.stderr);
    assert!(
        err.contains("has an interrupted reflection")
            && err.contains(&format!("huddle run --session \"{session}\" --resume")),
        "{err}"
    );
    // Resumed, then stopped by SIGTERM during iteration 2: kept again, and it says how to go on.
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["run", "--session", &session, "--resume"])
        .env("HUDDLE_HOME", home.path())
        .current_dir(home.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("resume");
    tokio::time::timeout(Duration::from_secs(120), async {
        while llm.requests_for("solo").len() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("iteration 2 asked again");
    let pid = i32::try_from(child.id().expect("running")).expect("a pid");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let stopped = child.wait_with_output().await.expect("stops");
    assert_eq!(stopped.status.code(), Some(143));
    let err = text(&stopped.stderr);
    assert!(
        err.contains(&format!(
            "the run is kept to be resumed: `huddle run --session \"{session}\" --resume`"
        )),
        "{err}"
    );
    let out = huddle_in(home.path(), &["run", "--session", &session, "--resume"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "Final draft");
    assert_eq!(
        llm.requests_for("solo").len(),
        4,
        "iteration 1 came from disk, iteration 2 was asked again (twice: it was cut off again)"
    );
    // Nothing is left to resume.
    let again = huddle_in(home.path(), &["run", "--session", &session, "--resume"]).await;
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("no interrupted reflection"));
}

/// `huddle trace` of a team run killed and resumed: the resumed run names the run it continues
/// and its interruption (linked runs), and the interrupted run reads as interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn trace_shows_a_resumed_run_with_its_interruption() {
    let llm = FakeLlm::start().await;
    llm.script(
        "o",
        vec![
            Reply::text("@worker:a look at A\n@worker:b look at B"),
            Reply::text("Synthesis of both"),
        ],
    );
    llm.script("a", vec![Reply::text("A found")]);
    llm.script("b", vec![slow("B slow finding"), Reply::text("B found")]);
    let preset = "name: Case\nmode: orchestrator\norchestrator: { model: fake/o }\nworkers:\n  - { name: a, model: fake/a }\n  - { name: b, model: fake/b }\n";
    let home = home_with(&llm, preset);
    let events = kill_after_turn_of(&llm, home.path(), "Case", "Investigate", "a", ("b", 1)).await;
    let first = events
        .iter()
        .find_map(|e| e["run_id"].as_str().map(str::to_string))
        .expect("the killed run's id");
    let (code, _, err) = resume(home.path(), "Case", &[]).await;
    assert_eq!(code, Some(0), "{err}");
    let team = team_made_by_run(home.path(), "Case");
    let trace = |args: &[&str]| {
        let mut all = vec!["trace", "--group", team.as_str()];
        all.extend_from_slice(args);
        let out = super::headless::huddle(home.path(), &all);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };

    // The newest run is the resumed one: it names the run it continues and the interruption.
    let out = trace(&[]);
    let mut lines = out.lines();
    let head = lines.next().expect("the run's line");
    assert!(
        !head.contains(&first),
        "the resumed run is a run of its own: {out}"
    );
    assert!(
        head.contains("orchestrator") && head.contains("completed"),
        "{out}"
    );
    let interruption = lines.next().expect("the interruption's line");
    assert!(
        interruption
            .trim_start()
            .starts_with(&format!("resumes run {first} (interrupted"))
            && interruption.contains("finished turns come from disk"),
        "{out}"
    );
    assert!(out.contains("result: Synthesis of both"), "{out}");
    // The turns it took from disk (the plan, a's finding) say so; b's, asked again, does not.
    let from_disk: Vec<&str> = out.lines().filter(|l| l.contains("(from disk)")).collect();
    assert_eq!(from_disk.len(), 2, "{out}");
    assert!(from_disk.iter().any(|l| l.contains(" a (from disk)")), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains(" b · ✓ completed") && l.contains("B found")),
        "{out}"
    );
    let json: Value = serde_json::from_str(&trace(&["--json"])).expect("JSON");
    assert_eq!(json["run"]["resumes"], first.as_str());
    assert_eq!(json["run"]["state"], "ended");

    // The run it continues: the host ended it when its `huddle run` went away (cancelled, left
    // resumable), with what it had finished.
    let out = trace(&["--run", &first]);
    let head = out.lines().next().unwrap_or_default();
    assert!(head.contains(&first) && head.contains("cancelled"), "{out}");
    assert!(
        out.contains("a · ✓ completed") && out.contains("A found"),
        "{out}"
    );
    assert!(!out.contains("resumes run"), "{out}");
}
