//! End to end in a pseudo-terminal: a session whose model is an ACP agent (the test agent
//! written with the reference SDK, `tests/fixtures/acp/test_agent.py`) asks permission before
//! its edit (`session/request_permission`). The approval popup lists the agent's own options by
//! name beside their keys; each key answers with the option of its kind, which the agent logs:
//! `n` rejects, `y` allows once, Esc (closing the popup) rejects, `s` rejects and stops the
//! turn, `a` allows always (and huddle asks no more about the same call in the session).
//! Nothing is allowed unless a key said so.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::providers_acp::{agent_provider_yaml, test_python};
use super::tui_pty::{ENTER, ESC, Huddle};

const DEADLINE: Duration = Duration::from_secs(60);

/// The outcomes the agent logged for its permission requests so far, by option id (or
/// `cancelled`).
fn outcomes(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["method"] == "permission")
        .map(|v| {
            v["outcome"]["optionId"]
                .as_str()
                .or(v["outcome"]["outcome"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// Waits until the agent logged its `n`th permission outcome; returns them all.
fn wait_outcomes(app: &Huddle, log: &Path, n: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let seen = outcomes(log);
        if seen.len() >= n {
            return seen;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the agent logged {seen:?}, not {n} outcomes; the screen:\n{}",
            app.text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the approval popup shows the agent's options; the agent's log is in the panic.
fn wait_popup(app: &Huddle, log: &Path) -> String {
    let start = Instant::now();
    loop {
        let text = app.text();
        if text.contains("the agent offers:") {
            return text;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "no popup; the agent's log:\n{}\nthe screen:\n{text}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the session's turn is over (its sidebar row shows `·`, not the busy spinner),
/// after the popup (drawn with the spinner) was seen. The next prompt is sent only then: one
/// sent while a turn is in flight is queued, and a queued chat of a TUI's host runs without
/// the TUI's approval rule (see the note at the end of this file).
fn wait_idle(app: &Huddle) {
    app.wait_for("· coder ");
}

/// Waits until the agent logged `n` prompts (a turn of the session reached it).
fn wait_prompts(app: &Huddle, log: &Path, n: usize) {
    let start = Instant::now();
    loop {
        let prompts = std::fs::read_to_string(log)
            .unwrap_or_default()
            .matches("\"method\": \"session/prompt\"")
            .count();
        if prompts >= n {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{prompts} prompts reached the agent, not {n}; the screen:\n{}",
            app.text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_acp_agents_permission_request_is_answered_in_the_popup_with_its_own_options() {
    let Some(python) = test_python("acp") else { return };
    let home = tempfile::tempdir().expect("home");
    let repo = tempfile::tempdir().expect("repo");
    // (In the working directory: the sandbox hides huddle's data directory from the agent.)
    let log = repo.path().join("agent.jsonl");
    std::fs::write(
        home.path().join("config.yaml"),
        format!("default_model: agent/x\n{}", agent_provider_yaml(&python, &log)),
    )
    .expect("config");
    let config_json = repo.path().join("config.json");

    let mut app = Huddle::start(home.path(), repo.path());
    app.wait_for("Welcome to huddle");
    app.key("N");
    app.wait_for("New session");
    app.type_text("coder");
    app.key(ENTER);
    app.key("i");

    // `n`: the agent's reject option; nothing written.
    app.type_text("edit it");
    app.key(ENTER);
    let popup = wait_popup(&app, &log);
    for said in [
        "Tool approval",
        "coder",
        "Edit config.json",
        "y      \"Allow once\"",
        "a      \"Always allow\" (and huddle allows this same call again",
        "n/Esc  \"Reject\"",
        "s      \"Reject\", and stop the run",
    ] {
        assert!(popup.contains(said), "`{said}` in the popup:\n{popup}");
    }
    app.key("n");
    assert_eq!(wait_outcomes(&app, &log, 1), ["reject-once"]);
    app.wait_for("Permission denied.");
    wait_idle(&app);
    assert!(!config_json.exists(), "nothing was written");

    // `y`: allowed once; the agent writes.
    app.type_text("edit it again");
    app.key(ENTER);
    wait_prompts(&app, &log, 2);
    wait_popup(&app, &log);
    app.key("y");
    assert_eq!(wait_outcomes(&app, &log, 2)[1], "allow-once");
    app.wait_for("Done.");
    wait_idle(&app);
    assert_eq!(
        std::fs::read_to_string(&config_json).expect("the agent wrote"),
        "{\"debug\": true}\n"
    );
    std::fs::remove_file(&config_json).expect("remove");

    // Esc closes the popup: a refusal, never an approval.
    app.type_text("and once more");
    app.key(ENTER);
    wait_prompts(&app, &log, 3);
    wait_popup(&app, &log);
    app.key(ESC);
    assert_eq!(wait_outcomes(&app, &log, 3)[2], "reject-once");
    wait_idle(&app);

    // `s`: rejected, and the turn stopped.
    app.key("i");
    app.type_text("edit it, please");
    app.key(ENTER);
    wait_prompts(&app, &log, 4);
    wait_popup(&app, &log);
    app.key("s");
    assert_eq!(wait_outcomes(&app, &log, 4)[3], "reject-once");
    wait_idle(&app);
    assert!(!config_json.exists(), "nothing was written");

    // `a`: the agent's allow_always; the same edit (kind, title and input) is not asked about
    // again (huddle answers it with allow_once, as approved for the session).
    app.type_text("edit it for good");
    app.key(ENTER);
    wait_prompts(&app, &log, 5);
    wait_popup(&app, &log);
    app.key("a");
    assert_eq!(wait_outcomes(&app, &log, 5)[4], "allow-always");
    wait_idle(&app);
    app.type_text("edit it without asking");
    app.key(ENTER);
    assert_eq!(wait_outcomes(&app, &log, 6)[5], "allow-once");
    assert!(!app.text().contains("the agent offers:"), "{}", app.text());

    app.key(ESC);
    app.quit_stopping_runs();
}

// Found writing this test (not fixed here: src/host/ is the host's): in a TUI that is a front
// end of the host, a message sent while the session's turn is in flight is queued as a second
// chat run; when the first run ends, `host::tui_calls::Scope::spawn` clears the session's
// scoped approval rule (`set_scoped_approval(id, None)`) while the second still runs, so the
// second run's approvals fall back to the host's default and are denied as in `huddle run`
// ("huddle run does not run tools that need approval unless --approve-tools is given") without
// a popup.
