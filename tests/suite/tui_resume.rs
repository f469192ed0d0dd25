//! An interrupted run of a mode other than a reflect cycle, offered by the TUI and resumed
//! there: `huddle run` on the scripted fake server (127.0.0.1) is killed (SIGKILL) right after
//! the first turn it reports finished; the TUI opened on that data dir (the real binary in a
//! pseudo-terminal, with its host) offers the run in its mode's words, `y` resumes it, the team
//! is shown finishing, and the server's log shows that no turn that had finished was asked
//! again. No timing assertions: each step polls the screen with a generous deadline.

use std::path::Path;

use super::fake_llm_server::{FakeLlm, Reply};
use super::headless_resume_modes::{asked, home_with, kill_after_turn_of, slow};
use super::tui_pty::Huddle;

/// Opens the TUI on `home`, waits for the offer (and `offer`, its words), resumes the run and
/// waits until the team's panel says it finished; then quits.
async fn resume_in_the_tui(home: &Path, offer: String) {
    let home = home.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let repo = tempfile::tempdir().expect("repo");
        let mut app = Huddle::start(&home, repo.path());
        app.wait_for("Interrupted run");
        let screen = app.wait_for(&offer);
        assert!(!screen.contains("reflect cycle"), "{screen}");
        app.key("y");
        app.wait_for("Cycle · finished");
        app.key("q");
        app.wait_exit();
    })
    .await
    .expect("the TUI");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_run_killed_mid_run_is_resumed_from_the_tui() {
    let llm = FakeLlm::start().await;
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
    llm.script("b", vec![slow("B slow check"), slow("B is fine")]);
    let preset = "name: Case\nmode: dispatch\norchestrator: { model: fake/o }\nworkers:\n  - { name: a, model: fake/a }\n  - { name: b, model: fake/b }\n";
    let home = home_with(&llm, preset);
    kill_after_turn_of(&llm, home.path(), "Case", "Check everything", "a", ("b", 1)).await;
    let before = llm.requests_for("o").len();
    resume_in_the_tui(home.path(), "The dispatch run of `Case".into()).await;
    assert_eq!(llm.requests_for("a").len(), 1, "a's result came from disk");
    assert_eq!(llm.requests_for("b").len(), 2, "b was dispatched again");
    let o: Vec<String> = llm
        .requests_for("o")
        .iter()
        .map(|r| r.json()["messages"].to_string())
        .collect();
    assert!(o.len() > before, "the orchestrator went on");
    for (i, body) in o.iter().enumerate() {
        assert!(!o[..i].contains(body), "o was asked the same thing twice: {body}");
    }
    let last = llm.requests_for("o").last().expect("o").prompt_texts().join("\n");
    assert!(last.contains("A is fine") && last.contains("B is fine"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_killed_mid_run_is_resumed_from_the_tui_at_its_phase() {
    let llm = FakeLlm::start().await;
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
    let home = home_with(&llm, preset);
    kill_after_turn_of(&llm, home.path(), "Case", "My printer jams", "t", ("h", 1)).await;
    resume_in_the_tui(home.path(), "The pipeline run of `Case".into()).await;
    assert_eq!(llm.requests_for("t").len(), 1, "the handoff came from disk");
    let h = asked(&llm, "h");
    assert_eq!(h.len(), 2, "h was cut off and asked again: {h:#?}");
    assert!(h.iter().all(|p| p.contains("the printer jams")), "{h:#?}");
}
