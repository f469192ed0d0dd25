//! An interrupted run of a mode other than a reflect cycle, offered by the TUI and resumed
//! there: `huddle run` on the scripted fake server (127.0.0.1) is killed (SIGKILL) right after
//! the first turn it reports finished; the TUI opened on that data dir (the real binary in a
//! pseudo-terminal, with its host) offers the run in its mode's words, `y` resumes it, the team
//! is shown finishing, and the server's log shows that no turn that had finished was asked
//! again. No timing assertions: each step polls the screen with a generous deadline.

use std::path::Path;
use std::time::{Duration, Instant};

use huddle::store::OrganizationFile;

use super::fake_llm_server::FakeLlm;
use super::headless_resume_modes::{
    assert_dispatch_resumed, assert_pipeline_resumed, killed_dispatch, killed_pipeline,
};
use super::tui_pty::Huddle;

/// Waits until the host has ended the run the killed `huddle run` left (saved interrupted, with
/// when, and gone from the host's runs: its `run_ended` is in its run file): a TUI opened before
/// sees it still going, and a run going is not offered. (The interruption is saved before the
/// run leaves the host's table: waiting for the first alone let a TUI open in between.)
fn wait_until_left(home: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let org = OrganizationFile::new(home.join("organization.json"))
            .inspect()
            .ok()
            .flatten();
        let left = org.is_some_and(|o| {
            o.groups.iter().any(|g| {
                g.state.run.as_ref().is_some_and(|r| r.interrupted_at.is_some())
                    && newest_run_ended(&home.join("runs").join(&g.id))
            })
        });
        if left {
            return;
        }
        assert!(Instant::now() < deadline, "the host never ended the run");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the newest run file in `dir` ends with the run's end.
fn newest_run_ended(dir: &Path) -> bool {
    let newest = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .max();
    newest
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|text| text.lines().last().map(|l| l.contains("\"event\":\"run_ended\"")))
        .unwrap_or(false)
}

/// Opens the TUI on `home` once the killed run is over, waits for the offer (and `offer`, its
/// words), resumes the run and waits until the team's panel says it finished; then quits.
async fn resume_in_the_tui(home: &Path, offer: String) {
    let home = home.to_path_buf();
    tokio::task::spawn_blocking(move || {
        wait_until_left(&home);
        let repo = tempfile::tempdir().expect("repo");
        let mut app = Huddle::start(&home, repo.path());
        app.wait_for("Interrupted run");
        let screen = app.wait_for(&offer);
        assert!(!screen.contains("reflect cycle"), "{screen}");
        app.key("y");
        app.wait_for("Cycle · finished");
        // The panel says the cycle finished a moment before the run's end reaches the TUI: a
        // quit in between is asked about the run still going.
        app.quit_stopping_runs();
    })
    .await
    .expect("the TUI");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_dispatch_run_killed_mid_run_is_resumed_from_the_tui() {
    let llm = FakeLlm::start().await;
    let home = killed_dispatch(&llm).await;
    let before = llm.requests_for("o").len();
    resume_in_the_tui(home.path(), "The dispatch run of `Case".into()).await;
    assert!(llm.requests_for("o").len() > before, "the orchestrator went on");
    assert_dispatch_resumed(&llm);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_pipeline_killed_mid_run_is_resumed_from_the_tui_at_its_phase() {
    let llm = FakeLlm::start().await;
    let home = killed_pipeline(&llm).await;
    resume_in_the_tui(home.path(), "The pipeline run of `Case".into()).await;
    assert_pipeline_resumed(&llm);
}
