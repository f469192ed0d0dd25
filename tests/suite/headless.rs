//! `huddle run` as a user runs it: the real binary, a temporary HUDDLE_HOME, the sim provider.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use huddle::store::{DataDirLock, OrganizationFile};

pub(super) fn huddle(home: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(args)
        .env("HUDDLE_HOME", home)
        .env(HOST_IDLE_VAR, "0")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(home)
        .output()
        .expect("run huddle");
    wait_for_host_exit(home);
    out
}

/// Set on every `huddle` a test starts: the host it starts exits as soon as nothing runs and no
/// front end is attached (as each command did before there was a host).
pub(super) const HOST_IDLE_VAR: &str = "HUDDLE_HOST_IDLE_MS";

/// Waits until no host holds the data dir (`huddle` with [`HOST_IDLE_VAR`] 0 leaves one for a
/// moment after it ends): the next command, or the test reading files, sees them as the last
/// command left them. A lock held by the test itself does not count.
pub(super) fn wait_for_host_exit(home: &Path) {
    let lock = home.join("huddle.lock");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while let Some(pid) = DataDirLock::holder(&lock) {
        if pid == std::process::id().to_string() || std::time::Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts `huddle` with `args`, waits until the saved organization shows `started`, sends
/// SIGINT (what Ctrl-C sends) and returns what the process printed and its exit status.
fn interrupt_when(
    home: &Path,
    args: &[&str],
    started: impl Fn(&huddle::model::Organization) -> bool,
) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(args)
        .env("HUDDLE_HOME", home)
        .env(HOST_IDLE_VAR, "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let org_file = OrganizationFile::new(home.join("organization.json"));
    // However long a busy machine takes to start it; the limit only ends a hang.
    let hang_guard = std::time::Instant::now() + Duration::from_secs(120);
    while !org_file.inspect().ok().flatten().is_some_and(|o| started(&o)) {
        assert!(std::time::Instant::now() < hang_guard, "the run never started");
        std::thread::sleep(Duration::from_millis(25));
    }
    // Let the first turn begin before interrupting it.
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    wait_for_host_exit(home);
    out
}

/// Every stdout line of a `--events` run, parsed; a line that is not JSON fails the test.
pub(super) fn ndjson(out: &Output) -> Vec<serde_json::Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

/// The name of the team the last `huddle run --preset PRESET` made (`<preset> · run <time>`).
pub(super) fn team_made_by_run(home: &Path, preset: &str) -> String {
    let org = OrganizationFile::new(home.join("organization.json"))
        .inspect()
        .expect("readable")
        .expect("saved");
    let prefix = format!("{preset} · run ");
    org.groups
        .iter()
        .filter(|g| g.name.starts_with(&prefix))
        .max_by_key(|g| g.headless_at)
        .map(|g| g.name.clone())
        .unwrap_or_else(|| panic!("no team made by a run of {preset}"))
}

/// Runs the team a `huddle run --preset <preset>` made once more, on `sim/slow-100ms` with
/// `--events`, and returns the events it printed (the run must succeed).
pub(super) fn second_run_events(home: &Path, preset: &str, prompt: &str) -> Vec<serde_json::Value> {
    let team = team_made_by_run(home, preset);
    let out = huddle(
        home,
        &[
            "run",
            "--group",
            &team,
            "--model",
            "sim/slow-100ms",
            "--events",
            prompt,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    ndjson(&out)
}

/// The executions a run started: the root's id (it must be of `root_kind`, without a parent)
/// and the others, each checked to be its child.
pub(super) fn executions_under_root<'e>(
    events: &'e [serde_json::Value],
    root_kind: &str,
) -> (String, Vec<&'e serde_json::Value>) {
    let started: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event"] == "execution_started")
        .collect();
    let root = started.first().expect("a root execution");
    assert_eq!(root["kind"], root_kind);
    assert!(root.get("parent_execution_id").is_none());
    let id = root["execution_id"].as_str().unwrap_or_default().to_string();
    for e in &started[1..] {
        assert_eq!(e["parent_execution_id"], id.as_str(), "{e}");
    }
    (id, started[1..].to_vec())
}

pub(super) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn every_builtin_preset_runs_to_a_sensible_end_on_the_sim() {
    let home = tempfile::tempdir().unwrap();
    for preset in [
        "Code Review Team",
        "Implement & Challenge",
        "Research Panel",
        "Draft, Critique, Edit",
        "Planning Team",
    ] {
        let out = huddle(
            home.path(),
            &[
                "run",
                "--preset",
                preset,
                "--model",
                "sim/x",
                "Add retries to the client",
            ],
        );
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{preset}: {stderr}");
        assert!(!stdout.trim().is_empty(), "{preset}: an answer on stdout");
        assert!(
            stderr.contains("SIMULATED"),
            "{preset}: the sim is labelled: {stderr}"
        );
        assert!(stderr.contains("finished"), "{preset}: {stderr}");
    }
    let org = OrganizationFile::new(home.path().join("organization.json"))
        .inspect()
        .unwrap()
        .unwrap();
    assert_eq!(
        org.groups.iter().filter(|g| g.is_team()).count(),
        5,
        "each run persisted its team"
    );
    let reflect = org
        .groups
        .iter()
        .find(|g| g.name.starts_with("Code Review Team · run "))
        .unwrap();
    let cycle = reflect.state.orchestrator_reflect.as_ref().unwrap();
    assert!(cycle.goal_met && !cycle.active);
    assert!(
        home.path().join("sessions").read_dir().unwrap().count() > 5,
        "transcripts written"
    );
}

#[test]
fn events_are_ndjson_with_event_and_group() {
    let home = tempfile::tempdir().unwrap();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Code Review Team",
            "--model",
            "sim/x",
            "--events",
            "Review it",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines = ndjson(&out);
    // Names for people, ids for programs: every line has both, and the run's id.
    assert!(lines.iter().all(|v| v["event"].is_string()
        && v["group"].is_string()
        && v["group_id"].is_string()
        && v["run_id"] == lines[0]["run_id"]));
    let first = lines.first().unwrap();
    assert_eq!(first["event"], "run_started");
    assert_eq!(first["key"]["kind"], "team");
    assert_eq!(first["key"]["group_id"], first["group_id"]);
    assert_eq!(lines[1]["event"], "cycle_started");
    let last = lines.last().unwrap();
    assert_eq!(last["event"], "run_ended");
    assert_eq!(last["outcome"], "goal_met");
    let result = &lines[lines.len() - 2];
    assert_eq!(result["event"], "run_result");
    assert!(result["text"].as_str().is_some_and(|t| !t.is_empty()));
    let finished = &lines[lines.len() - 3];
    assert_eq!(finished["event"], "cycle_finished");
    assert_eq!(finished["outcome"], "goal_met");
    // Session events name their session by id too.
    assert!(
        lines
            .iter()
            .filter(|v| v["event"] == "message" || v["event"] == "worker_finished")
            .all(|v| v["session_id"].is_string())
    );
    for needed in [
        "iteration_started",
        "phase",
        "assignment",
        "worker_finished",
        "evaluation",
        "message",
    ] {
        assert!(lines.iter().any(|v| v["event"] == needed), "missing {needed}");
    }
}

#[test]
fn a_plain_question_reads_stdin_and_bad_usage_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["run", "--model", "sim/quick", "-"])
        .env("HUDDLE_HOME", home.path())
        .env("HUDDLE_HOST_IDLE_MS", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"What is a QUESTION_FROM_STDIN?")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("QUESTION_FROM_STDIN"),
        "{}",
        text(&out.stdout)
    );

    for args in [
        vec!["run", "--preset", "No Such Team", "x"],
        vec!["run", "--model", "nowhere/m", "x"],
        vec!["run", "--mode", "chaos", "x"],
        vec!["run", "--group", "nope", "x"],
    ] {
        let out = huddle(home.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(!text(&out.stderr).is_empty());
    }
}

#[test]
fn a_broadcast_where_every_member_failed_ends_failed_in_its_events_too() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.yaml"),
        "providers:\n  - { name: broken, kind: command, command: [\"sh\", \"-c\", \"echo no >&2; exit 3\"] }\n",
    )
    .unwrap();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Research Panel",
            "--model",
            "broken/x",
            "--events",
            "q",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("every session failed"),
        "{}",
        text(&out.stderr)
    );
    let events: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let finished = events
        .iter()
        .find(|e| e["event"] == "cycle_finished")
        .expect("cycle_finished");
    assert_eq!(finished["outcome"], "failed", "{finished}");
    let ended = events
        .iter()
        .find(|e| e["event"] == "run_ended")
        .expect("run_ended");
    assert_eq!(ended["outcome"], "failed", "{ended}");
}

/// An answer that cannot be written to its transcript is still shown (it was paid for), with a
/// warning that names the member and says a resumed run would ask again: never as if it were
/// safe on disk.
#[test]
fn an_answer_that_could_not_be_saved_is_said_to_be_so() {
    let home = tempfile::tempdir().unwrap();
    // A file where the transcripts' folder belongs: no transcript can be written.
    std::fs::write(home.path().join("sessions"), b"").unwrap();
    let out = huddle(home.path(), &["run", "--preset", "Research Panel", "q"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for member in ["analyst", "practitioner", "skeptic"] {
        assert!(
            stderr.contains(&format!("{member}'s answer was not saved")),
            "{stderr}"
        );
    }
}

#[test]
fn a_second_process_is_refused_while_the_data_dir_is_locked() {
    let home = tempfile::tempdir().unwrap();
    let _lock = DataDirLock::acquire(&home.path().join("huddle.lock")).unwrap();
    let out = huddle(home.path(), &["run", "--model", "sim/x", "hello"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("already running"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn reusing_a_group_and_overriding_the_mode() {
    let home = tempfile::tempdir().unwrap();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Planning Team",
            "--model",
            "sim/x",
            "Plan a release",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let team = team_made_by_run(home.path(), "Planning Team");
    let out = huddle(
        home.path(),
        &[
            "run",
            "--group",
            &team,
            "--mode",
            "orchestrator_reflect",
            "--max-iterations",
            "2",
            "--model",
            "sim/x",
            "Plan it again",
        ],
    );
    assert!(
        matches!(out.status.code(), Some(0) | Some(3)),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("orchestrator_reflect"),
        "{}",
        text(&out.stderr)
    );
    let org = OrganizationFile::new(home.path().join("organization.json"))
        .inspect()
        .unwrap()
        .unwrap();
    assert_eq!(
        org.groups.iter().filter(|g| g.is_team()).count(),
        1,
        "the group was reused"
    );
}

#[test]
fn ctrl_c_stops_the_run_keeps_the_cycle_resumable_and_exits_130() {
    let home = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "--preset",
        "Code Review Team",
        "--model",
        "sim/slow-3000ms",
        "Review slowly",
    ];
    let out = interrupt_when(home.path(), &args, |org| {
        org.groups
            .iter()
            .any(|g| g.state.orchestrator_reflect.as_ref().is_some_and(|r| r.active))
    });
    let org_file = OrganizationFile::new(home.path().join("organization.json"));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let org = org_file.inspect().unwrap().unwrap();
    let cycle = org
        .groups
        .iter()
        .find_map(|g| g.state.orchestrator_reflect.clone())
        .unwrap();
    // Stopped from outside, not finished: `huddle run --group … --resume` continues it.
    assert!(cycle.is_interrupted(), "{cycle:?}");
    assert!(!cycle.cancelled);
}

#[test]
fn a_plain_session_with_max_iterations_reflects_until_it_says_it_is_done() {
    let home = tempfile::tempdir().unwrap();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--model",
            "sim/x",
            "--max-iterations",
            "4",
            "--events",
            "Write a limerick",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = ndjson(&out);
    let iterations = events
        .iter()
        .filter(|e| e["event"] == "iteration_started")
        .count();
    assert_eq!(
        iterations, 2,
        "the sim says [[REFLECTION_COMPLETE]] from its second answer on"
    );
    let last = events.last().unwrap();
    assert_eq!(last["event"], "run_ended");
    assert_eq!(last["key"]["kind"], "reflection");
    let finished = &events[events.len() - 2];
    assert_eq!(finished["event"], "cycle_finished");
    assert_eq!(finished["outcome"], "goal_met");
}

#[test]
fn ctrl_c_stops_a_one_shot_question_too() {
    let home = tempfile::tempdir().unwrap();
    let args = ["run", "--model", "sim/slow-20000ms", "Take your time"];
    let out = interrupt_when(home.path(), &args, |org| !org.sessions.is_empty());
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
}

#[test]
fn squad_export_writes_into_the_groups_own_repo() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let repo_arg = repo.path().to_string_lossy().into_owned();
    let out = huddle(
        home.path(),
        &[
            "run",
            "--preset",
            "Planning Team",
            "--model",
            "sim/x",
            "--repo",
            &repo_arg,
            "Plan",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Run from HUDDLE_HOME (not the repo) without --repo.
    let team = team_made_by_run(home.path(), "Planning Team");
    let out = huddle(home.path(), &["squad", "export", "--group", &team]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        repo.path().join(".squad/team.md").is_file(),
        "{}",
        text(&out.stdout)
    );
    assert!(!home.path().join(".squad").exists());
    let team = std::fs::read_to_string(repo.path().join(".squad/team.md")).unwrap();
    assert!(team.contains("Planning Team"), "{team}");
}

/// A second team from one preset: its members' sessions are made unique (`…-analyst-2`), but
/// its progress lines and its result (each answer under its member's heading) name them by
/// handle, as the first team's (issue 28 item 3).
#[test]
fn a_second_broadcast_team_names_its_members_by_handle() {
    let home = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "--preset",
        "Research Panel",
        "--model",
        "sim/x",
        "What first?",
    ];
    for _ in 0..2 {
        let out = huddle(home.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(stdout.contains("## analyst\n"), "{stdout}");
        assert!(
            !stdout.contains("analyst-2") && !stderr.contains("analyst-2"),
            "{stdout}\n{stderr}"
        );
    }
    let org = huddle::store::OrganizationFile::new(home.path().join("organization.json"))
        .inspect()
        .unwrap()
        .unwrap();
    assert!(org.sessions.iter().any(|s| s.name.ends_with("analyst-2")));
}

/// `--repo .` is recorded (and shown in the TUI's team header) as the absolute path, not `.`
/// (issue 28 item 18).
#[test]
fn a_relative_repo_is_recorded_as_an_absolute_path() {
    let home = tempfile::tempdir().unwrap();
    let out = huddle(
        home.path(),
        &[
            "--repo",
            ".",
            "run",
            "--preset",
            "Research Panel",
            "--model",
            "sim/x",
            "q",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let org = huddle::store::OrganizationFile::new(home.path().join("organization.json"))
        .inspect()
        .unwrap()
        .unwrap();
    let repos: Vec<_> = org.groups.iter().filter_map(|g| g.repo.clone()).collect();
    assert!(
        !repos.is_empty() && repos.iter().all(|r| r.is_absolute()),
        "{repos:?}"
    );
}
