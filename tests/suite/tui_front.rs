//! The TUI as a front end of the data dir's host (issue 23): several TUIs at once on one data
//! dir see each other's edits; a run started in one goes on after it quits and the next one
//! shows it live. The real binary in pseudo-terminals, offline with the sim provider; each step
//! polls the screen (no timing assertions).

use std::time::{Duration, Instant};

use super::tui_pty::{ENTER, ESC, Huddle};

const DEADLINE: Duration = Duration::from_secs(60);

fn huddle(home: &std::path::Path, repo: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(args)
        .env("HUDDLE_HOME", home)
        .env("HUDDLE_HOST_IDLE_MS", "0")
        .current_dir(repo)
        .output()
        .expect("run huddle")
}

/// Two TUIs in two repositories on one data dir: a team made in one shows in the other, and
/// back; the data dir has one host (the TUIs are its front ends).
#[test]
fn two_tuis_on_one_data_dir_see_each_others_edits() {
    let home = tempfile::tempdir().unwrap();
    let repo_a = tempfile::tempdir().unwrap();
    let repo_b = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.yaml"), "default_model: sim/demo\n").unwrap();

    let mut a = Huddle::start(home.path(), repo_a.path());
    a.wait_for("Welcome to huddle");
    let mut b = Huddle::start(home.path(), repo_b.path());
    b.wait_for("Welcome to huddle");

    a.key("n");
    a.wait_for("New team from a preset");
    a.type_text("research panel");
    a.wait_for("Three independent perspectives");
    a.key(ENTER);
    a.wait_for("Prompt for Research Panel");
    // The other TUI shows it without a key pressed.
    b.wait_for("Research Panel");

    b.key("n");
    b.wait_for("New team from a preset");
    b.type_text("code review");
    b.wait_for("Reviews a change");
    b.key(ENTER);
    b.wait_for("Prompt for Code Review Team");
    a.wait_for("Code Review Team");
    // Each keeps its own focus and draft: `a` still has its prompt line for its own team.
    assert!(a.text().contains("Prompt for Research Panel"), "{}", a.text());

    let ps = huddle(home.path(), repo_a.path(), &["ps"]);
    assert_eq!(ps.status.code(), Some(0));
    a.key(ESC);
    a.key("q");
    a.wait_exit();
    b.key(ESC);
    b.key("q");
    b.wait_exit();
    // Both teams are on disk, with the repository each was made in.
    let org = wait_for_file_with(&home.path().join("organization.json"), "Code Review Team");
    assert!(org.contains("Research Panel"), "{org}");
    assert!(org.contains(&*repo_b.path().to_string_lossy()), "{org}");
}

/// A TUI (with slow sim answers) that made an Implement & Challenge team and started its cycle.
fn a_tui_running_a_slow_cycle(home: &std::path::Path, repo: &std::path::Path) -> Huddle {
    std::fs::write(home.join("config.yaml"), "default_model: sim/slow-1500ms\n").unwrap();
    let mut app = Huddle::start(home, repo);
    app.wait_for("Welcome to huddle");
    app.key("n");
    app.type_text("implement");
    app.wait_for("Implement & Challenge");
    app.key(ENTER);
    app.wait_for("Prompt for Implement & Challenge");
    app.type_text("Write a rate limiter");
    app.key(ENTER);
    app.wait_for("Cycle · running");
    app
}

/// A run started in a TUI goes on when it quits (leaving it running is the default), `huddle
/// ps` lists it meanwhile, and the next TUI shows it live where it is, to its end; it is not
/// offered as an interrupted run.
#[test]
fn a_run_outlives_the_tui_that_started_it_and_the_next_one_shows_it() {
    let (home, repo) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut app = a_tui_running_a_slow_cycle(home.path(), repo.path());
    app.key(ESC);
    app.key("q");
    app.wait_for("leave them running");
    app.wait_for("(orchestrator_reflect run)");
    app.key("y");
    app.wait_exit();

    let ps = huddle(home.path(), repo.path(), &["ps"]);
    let listed = String::from_utf8_lossy(&ps.stdout).into_owned();
    assert!(
        listed.contains("Implement & Challenge") && listed.contains("running"),
        "{listed}\n{}",
        String::from_utf8_lossy(&ps.stderr)
    );

    let mut again = Huddle::start(home.path(), repo.path());
    again.wait_for("Cycle · running");
    assert!(!again.text().contains("Interrupted run"), "{}", again.text());
    again.wait_for("Cycle · finished");
    // Its timeline so far came with it: the first steps of the run are there.
    again.wait_for("finished: goal_met");
    again.key("q");
    again.wait_exit();
}

/// The host of an open TUI killed with SIGKILL mid-cycle (by its pid): the TUI starts a new
/// host by itself (as any front end does), connects again, keeps its draft, says so and offers
/// the interrupted cycle; `r` resumes it in the new host.
#[test]
fn a_tui_whose_host_is_killed_starts_a_new_one_and_offers_the_interrupted_run() {
    let (home, repo) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut app = a_tui_running_a_slow_cycle(home.path(), repo.path());
    app.type_text("a draft kept");
    app.wait_for("a draft kept");

    let lock = home.path().join("huddle.lock");
    let killed = host_pid(&lock);
    // SAFETY: kill(2) of the host this test's TUI started, by its pid.
    assert_eq!(unsafe { libc::kill(killed, libc::SIGKILL) }, 0);

    app.wait_for("The huddle host stopped");
    app.wait_for("Interrupted run");
    let new = host_pid(&lock);
    assert_ne!(new, killed, "a new host runs");
    assert!(
        !app.text().contains("went away"),
        "no dialog says the host went away:\n{}",
        app.text()
    );
    app.key("r");
    app.key("y");
    app.wait_for("Cycle · running");
    app.wait_for("a draft kept");
    app.key(ESC);
    app.quit_stopping_runs();
    // The new host goes once its stopped run ended (idle at once here); else it is ended.
    let start = Instant::now();
    // SAFETY: kill(2) with signal 0 only asks whether the pid lives.
    while unsafe { libc::kill(new, 0) } == 0 && start.elapsed() < DEADLINE {
        std::thread::sleep(Duration::from_millis(100));
    }
    if unsafe { libc::kill(new, 0) } == 0 {
        // SAFETY: the host this test's TUI started, by its pid.
        unsafe { libc::kill(new, libc::SIGTERM) };
        panic!("the new host did not exit by itself");
    }
}

/// The pid in the data dir's lock once a live host holds it.
fn host_pid(lock: &std::path::Path) -> i32 {
    let start = Instant::now();
    loop {
        let pid = std::fs::read_to_string(lock)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
            // SAFETY: kill(2) with signal 0 only asks whether the pid lives.
            .filter(|pid| unsafe { libc::kill(*pid, 0) } == 0);
        if let Some(pid) = pid {
            return pid;
        }
        assert!(start.elapsed() < DEADLINE, "no host holds {}", lock.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The file's text once it contains `needle` (the host saves in the background and goes a
/// moment after its last front end).
fn wait_for_file_with(path: &std::path::Path, needle: &str) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{} never held `{needle}`:\n{text}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
