//! An interrupted run of a mode other than a reflect cycle, offered by the TUI and resumed
//! there: `huddle run` on the scripted fake server (127.0.0.1) is killed (SIGKILL) right after
//! the first turn it reports finished; the TUI opened on that data dir (the real binary in a
//! pseudo-terminal, with its host) offers the run in its mode's words, `y` resumes it, the team
//! is shown finishing, and the server's log shows that no turn that had finished was asked
//! again. No timing assertions: each step polls the screen with a generous deadline.

use std::path::Path;

use super::fake_llm_server::FakeLlm;
use super::headless_resume_modes::{
    assert_dispatch_resumed, assert_pipeline_resumed, killed_dispatch, killed_pipeline,
};
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
    let home = killed_dispatch(&llm).await;
    let before = llm.requests_for("o").len();
    resume_in_the_tui(home.path(), "The dispatch run of `Case".into()).await;
    assert!(llm.requests_for("o").len() > before, "the orchestrator went on");
    assert_dispatch_resumed(&llm);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_killed_mid_run_is_resumed_from_the_tui_at_its_phase() {
    let llm = FakeLlm::start().await;
    let home = killed_pipeline(&llm).await;
    resume_in_the_tui(home.path(), "The pipeline run of `Case".into()).await;
    assert_pipeline_resumed(&llm);
}
