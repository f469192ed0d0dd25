//! The sandbox and hooks through `huddle run`, the real binary: a required sandbox that is
//! missing starts no agent (exit non-zero, the reason said); config.yaml's hooks run, while a
//! repository's `.squad/huddle.yaml` can add none.

use std::path::Path;
use std::process::{Command, Output};

use super::headless::text;

fn huddle_with(home: &Path, envs: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_huddle"));
    cmd.args(args)
        .env("HUDDLE_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("HUDDLE_BWRAP")
        .current_dir(home);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("run huddle")
}

#[test]
fn a_required_sandbox_that_is_missing_starts_no_agent_and_says_why() {
    let home = tempfile::tempdir().expect("home");
    let marker = home.path().join("agent-ran");
    std::fs::write(
        home.path().join("config.yaml"),
        format!(
            "providers:\n  - {{ name: agent, kind: command, command: [touch, \"{}\"] }}\n",
            marker.display()
        ),
    )
    .expect("config");
    let out = huddle_with(
        home.path(),
        &[("HUDDLE_BWRAP", "/nonexistent/bwrap")],
        &[
            "run",
            "--sandbox",
            "workspace-write",
            "--model",
            "agent/x",
            "Do it.",
        ],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "the sandbox is required (workspace-write, set in --sandbox) but not available: bwrap not found at /nonexistent/bwrap"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("agent agent not started"), "{stderr}");
    assert!(!marker.exists(), "the agent never ran");

    // Without --sandbox (nothing required) it runs, unconfined, and says so nowhere silently:
    // doctor tells.
    let out = huddle_with(
        home.path(),
        &[("HUDDLE_BWRAP", "/nonexistent/bwrap")],
        &["run", "--model", "agent/x", "Do it."],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(marker.exists());
    let doctor = huddle_with(
        home.path(),
        &[("HUDDLE_BWRAP", "/nonexistent/bwrap")],
        &["doctor"],
    );
    let report = text(&doctor.stdout);
    assert!(
        report.contains("!! bwrap       bwrap not found at /nonexistent/bwrap"),
        "{report}"
    );
    assert!(report.contains("run unconfined"), "{report}");
}

#[test]
fn config_hooks_run_and_a_squad_folder_cannot_add_one() {
    let home = tempfile::tempdir().expect("home");
    let repo = home.path().join("repo");
    std::fs::create_dir_all(repo.join(".squad")).expect("squad");
    let squad_marker = home.path().join("squad-hook-ran");
    let user_marker = repo.join("user-hook-ran");
    std::fs::write(
        repo.join(".squad/team.md"),
        "# Squad Team — Hooked\n\n## Members\n\n| Name | Role |\n|---|---|\n| Ada | Dev |\n",
    )
    .expect("team.md");
    std::fs::write(
        repo.join(".squad/huddle.yaml"),
        format!(
            "hooks:\n  run_finished: [{{ command: [touch, \"{m}\"] }}]\n  turn_finished: [{{ command: [touch, \"{m}\"] }}]\n",
            m = squad_marker.display()
        ),
    )
    .expect("huddle.yaml");
    // The user's own hook (config.yaml) runs in the team's repository, sandboxed.
    std::fs::write(
        home.path().join("config.yaml"),
        "hooks:\n  run_finished: [{ command: [sh, -c, \"cat > user-hook-ran\"] }]\n",
    )
    .expect("config");
    let out = huddle_with(
        home.path(),
        &[],
        &[
            "run",
            "--repo",
            &repo.display().to_string(),
            "--preset",
            "Hooked",
            "--max-iterations",
            "1",
            "Ship it.",
        ],
    );
    let stderr = text(&out.stderr);
    // One iteration on the sim ends at the limit (its own exit code): the run went through.
    assert!(stderr.contains("finished: max_iterations"), "{stderr}");
    assert!(stderr.contains("hooks: ignored"), "the refusal is said: {stderr}");
    assert!(!squad_marker.exists(), "a .squad/ hook ran");
    let seen: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&user_marker).expect("the user's hook ran"))
            .expect("json");
    assert_eq!(seen["hook_event_name"], "RunFinished");
    assert_eq!(seen["team"].as_str().map(|t| t.starts_with("Hooked")), Some(true));
}
