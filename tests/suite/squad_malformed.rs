//! Hand-made broken or hostile team folders: each is either loaded sensibly or refused with a
//! reason, and nothing outside the team folder is ever read.

use std::fs;
use std::path::{Path, PathBuf};

use huddle::config::Config;
use huddle::model::Mode;
use huddle::presets::squad::{SquadError, discover};

struct Repo {
    _tmp: tempfile::TempDir,
    /// `<tmp>/myrepo`, so the name fallback is predictable.
    path: PathBuf,
}

fn repo() -> Repo {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("myrepo");
    fs::create_dir_all(&path).unwrap();
    Repo { _tmp: tmp, path }
}

fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

fn config() -> Config {
    Config::from_env(|_| None)
}

const ROSTER: &str = "# Squad Team — Test Team\n\n## Members\n\n| Name | Role | Charter | Status |\n|---|---|---|---|\n| Alice | Builder | `.squad/agents/alice/charter.md` | ✅ Active |\n";

#[test]
fn no_team_folder_is_no_preset() {
    let r = repo();
    assert!(discover(&r.path, &config()).unwrap().is_none());
}

#[test]
fn team_folder_without_team_md_says_so() {
    let r = repo();
    write(&r.path, ".squad/agents/alice/charter.md", "# Alice — Builder\n");
    let err = discover(&r.path, &config()).unwrap_err();
    assert!(matches!(err, SquadError::NoTeamFile { .. }), "{err}");
    assert!(err.to_string().contains("no team.md"), "{err}");
}

#[test]
fn empty_roster_without_agents_is_an_error_with_a_reason() {
    let r = repo();
    write(
        &r.path,
        ".squad/team.md",
        "# Squad Team\n\n## Members\n\n| Name | Role | Charter | Status |\n|---|---|---|---|\n",
    );
    let err = discover(&r.path, &config()).unwrap_err();
    assert!(matches!(err, SquadError::NoWorkers { .. }), "{err}");
    assert!(err.to_string().contains("no roster table"), "{err}");
}

#[test]
fn empty_roster_falls_back_to_agent_folders() {
    let r = repo();
    write(&r.path, ".squad/team.md", "# Squad Team\n\nNothing here yet.");
    write(
        &r.path,
        ".squad/agents/alice/charter.md",
        "# Alice — Builder\n\nI build.\n",
    );
    write(
        &r.path,
        ".squad/agents/_alumni/bob/charter.md",
        "# Bob — Retired\n",
    );
    write(&r.path, ".squad/agents/scribe/charter.md", "# Scribe\n");
    let p = discover(&r.path, &config()).unwrap().unwrap();
    assert_eq!(p.name, "myrepo squad");
    let got: Vec<(&str, Option<&str>)> = p
        .workers
        .iter()
        .map(|w| (w.name.as_str(), w.role.as_deref()))
        .collect();
    assert_eq!(got, [("alice", Some("Builder"))]);
    assert_eq!(
        p.workers[0].system_prompt.as_deref(),
        Some("# Alice — Builder\n\nI build.")
    );
    assert!(
        p.warnings.iter().any(|w| w.contains("agents/ folders")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn only_special_members_is_an_error_naming_them() {
    let r = repo();
    write(
        &r.path,
        ".squad/team.md",
        "# Squad Team\n\n## Members\n\n| Name | Role | Charter | Status |\n|---|---|---|---|\n| Scribe | Session Logger | — | 📋 Silent |\n| Ralph | Work Monitor | — | 🔄 Monitor |\n| @copilot | Coding Agent | — | 🤖 Coding Agent |\n| Tamir | Owner | — | 👤 Human |\n",
    );
    write(&r.path, ".squad/agents/scribe/charter.md", "# Scribe\n");
    let err = discover(&r.path, &config()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("only special members") && text.contains("Scribe") && text.contains("Tamir"),
        "{text}"
    );
}

#[cfg(unix)]
#[test]
fn charter_symlinked_outside_is_refused() {
    let r = repo();
    write(&r.path, ".squad/team.md", ROSTER);
    fs::create_dir_all(r.path.join(".squad/agents/alice")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", r.path.join(".squad/agents/alice/charter.md")).unwrap();
    let p = discover(&r.path, &config()).unwrap().unwrap();
    let prompt = p.workers[0].system_prompt.as_deref().unwrap();
    assert!(!prompt.contains("root:"), "{prompt}");
    assert!(prompt.contains("Builder"), "role prompt instead: {prompt}");
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("refused") && w.contains("outside the team folder")),
        "{:?}",
        p.warnings
    );
}

#[cfg(unix)]
#[test]
fn team_folder_or_team_md_linked_outside_is_refused() {
    let r = repo();
    let elsewhere = r.path.parent().unwrap().join("elsewhere");
    write(&elsewhere, "team.md", ROSTER);
    std::os::unix::fs::symlink(&elsewhere, r.path.join(".squad")).unwrap();
    let err = discover(&r.path, &config()).unwrap_err();
    assert!(err.to_string().contains("outside"), "{err}");

    let r = repo();
    fs::create_dir_all(r.path.join(".squad")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("team.md"), r.path.join(".squad/team.md")).unwrap_or(());
    let err = discover(&r.path, &config()).unwrap_err();
    assert!(matches!(err, SquadError::Unreadable { .. }), "{err}");
}

#[test]
fn huge_charter_is_refused() {
    let r = repo();
    write(&r.path, ".squad/team.md", ROSTER);
    write(&r.path, ".squad/agents/alice/charter.md", "x".repeat(1024 * 1024));
    let p = discover(&r.path, &config()).unwrap().unwrap();
    assert!(
        p.workers[0]
            .system_prompt
            .as_deref()
            .unwrap()
            .starts_with("You are Alice")
    );
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("over the 262144-byte limit")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn binary_charter_is_refused() {
    let r = repo();
    write(&r.path, ".squad/team.md", ROSTER);
    write(
        &r.path,
        ".squad/agents/alice/charter.md",
        b"# Alice\0\x01\x02binary",
    );
    let p = discover(&r.path, &config()).unwrap().unwrap();
    assert!(!p.workers[0].system_prompt.as_deref().unwrap().contains('\0'));
    assert!(
        p.warnings.iter().any(|w| w.contains("binary")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn invalid_utf8_is_decoded_lossily_with_a_warning() {
    let r = repo();
    write(&r.path, ".squad/team.md", ROSTER);
    write(
        &r.path,
        ".squad/agents/alice/charter.md",
        b"# Alice \xE9t\xE9 builder\n",
    );
    let p = discover(&r.path, &config()).unwrap().unwrap();
    let prompt = p.workers[0].system_prompt.as_deref().unwrap();
    assert!(prompt.starts_with("# Alice \u{fffd}t\u{fffd}"), "{prompt}");
    assert!(
        p.warnings.iter().any(|w| w.contains("not valid UTF-8")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn path_traversal_in_the_charter_cell_is_not_followed() {
    let r = repo();
    // `<tmp>/x`: two levels up from `<tmp>/myrepo/.squad`.
    fs::write(r.path.parent().unwrap().join("x"), "SECRET").unwrap();
    write(
        &r.path,
        ".squad/team.md",
        "# T\n\n| Name | Role | Charter |\n|---|---|---|\n| Alice | Builder | ../../x |\n",
    );
    let p = discover(&r.path, &config()).unwrap().unwrap();
    assert!(!p.workers[0].system_prompt.as_deref().unwrap().contains("SECRET"));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("../../x") && w.contains("outside")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn table_with_missing_cells_crlf_bom_and_no_final_newline() {
    let r = repo();
    write(
        &r.path,
        ".squad/team.md",
        "\u{feff}# Squad Team — Ragged\r\n\r\n> ragged rows\r\n\r\n| Name | Role | Charter | Status |\r\n|---|---|---|---|\r\n| Alice |\r\n| Bob | Dev\r\n|  | Nobody |\r\n| Carol | QA | | Active |",
    );
    let p = discover(&r.path, &config()).unwrap().unwrap();
    assert_eq!(p.name, "Ragged");
    assert_eq!(p.description.as_deref(), Some("ragged rows"));
    let got: Vec<(&str, Option<&str>)> = p
        .workers
        .iter()
        .map(|w| (w.name.as_str(), w.role.as_deref()))
        .collect();
    assert_eq!(
        got,
        [("alice", None), ("bob", Some("Dev")), ("carol", Some("QA"))]
    );
    assert!(p.workers.iter().all(|w| w.system_prompt.is_some()));
}

#[test]
fn mode_line_and_bad_mode() {
    let r = repo();
    write(
        &r.path,
        ".squad/team.md",
        ROSTER.replace("## Members", "mode: broadcast\n\n## Members"),
    );
    let p = discover(&r.path, &config()).unwrap().unwrap();
    assert_eq!(p.mode, Mode::Broadcast);
    assert!(p.orchestrator.is_none());

    write(
        &r.path,
        ".squad/team.md",
        ROSTER.replace("## Members", "mode: round-robin\n\n## Members"),
    );
    let p = discover(&r.path, &config()).unwrap().unwrap();
    assert_eq!(p.mode, Mode::OrchestratorReflect);
    assert!(
        p.warnings.iter().any(|w| w.contains("round-robin")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn repo_team_cannot_select_a_command_provider_but_overrides_work() {
    let r = repo();
    write(
        &r.path,
        ".squad/team.md",
        format!("{ROSTER}| Bob | Dev | — | ✅ Active |\n"),
    );
    write(
        &r.path,
        ".squad/agents/alice/charter.md",
        "# Alice — Builder\n\n## Model\n\n- **Preferred:** claude/opus\n",
    );
    write(
        &r.path,
        ".squad/config.json",
        r#"{"version": 1, "agentModelOverrides": {"Bob": "sim/smart"}}"#,
    );
    let config = Config::parse(
        "default_model: sim/default\nproviders:\n  - { name: claude, kind: command, command: [claude, -p] }\n",
        Path::new("config.yaml"),
    )
    .unwrap();
    let p = discover(&r.path, &config).unwrap().unwrap();
    assert_eq!(p.workers[0].model, None);
    assert!(
        p.warnings.iter().any(|w| w.contains("command provider")),
        "{:?}",
        p.warnings
    );
    assert_eq!(p.workers[1].model.as_deref(), Some("sim/smart"));
}

#[test]
fn squad_is_preferred_over_legacy_ai_team() {
    let r = repo();
    write(&r.path, ".ai-team/team.md", ROSTER.replace("Alice", "Old"));
    let p = discover(&r.path, &config()).unwrap().unwrap();
    assert_eq!(p.workers[0].name, "old");
    write(&r.path, ".squad/team.md", ROSTER);
    let p = discover(&r.path, &config()).unwrap().unwrap();
    assert_eq!(p.workers[0].name, "alice");
    assert!(p.source.unwrap().ends_with(".squad"));
}

#[test]
fn routing_and_decisions_become_contexts_and_empty_is_absent() {
    let r = repo();
    write(&r.path, ".squad/team.md", ROSTER);
    write(
        &r.path,
        ".squad/routing.md",
        "# Routing\r\n\r\n| Work | Agent |\r\n",
    );
    write(&r.path, ".squad/decisions.md", "  \n");
    let p = discover(&r.path, &config()).unwrap().unwrap();
    assert_eq!(
        p.routing_context.as_deref(),
        Some("# Routing\n\n| Work | Agent |")
    );
    assert_eq!(p.shared_context, None);
}

#[test]
fn roster_of_unusable_names_is_no_workers_with_the_reason() {
    let r = repo();
    write(
        &r.path,
        ".squad/team.md",
        "# Squad Team\n\n## Members\n\n| Name | Role |\n|---|---|\n| ... | Builder |\n| ?! | Tester |\n",
    );
    let err = discover(&r.path, &config()).unwrap_err();
    assert!(matches!(err, SquadError::NoWorkers { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("...") && text.contains("?!"), "{text}");
    assert!(text.contains("letters or digits"), "{text}");
}

#[test]
fn human_members_section_rows_are_humans() {
    let r = repo();
    write(
        &r.path,
        ".squad/team.md",
        format!(
            "{ROSTER}\n## Human Members\n\n| Name | Role | Charter | Status |\n|---|---|---|---|\n| Tamir | Owner | — | ✅ Active |\n| Dina | Product | — | Active |\n"
        ),
    );
    let p = discover(&r.path, &config()).unwrap().unwrap();
    let names: Vec<&str> = p.workers.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["alice"]);
}

#[test]
fn member_named_by_the_coordinator_section_is_not_a_worker() {
    let r = repo();
    write(
        &r.path,
        ".squad/team.md",
        "# Squad Team\n\n## Coordinator\n\n| Name | Role | Notes |\n|---|---|---|\n| Lead | Architect | Routes work |\n\n## Members\n\n| Name | Role | Status |\n|---|---|---|\n| 🏗️ Lead | Architect | active |\n| Runtime | Engineer | active |\n",
    );
    write(&r.path, ".squad/agents/lead/charter.md", "# Lead — Architect\n");
    let p = discover(&r.path, &config()).unwrap().unwrap();
    let names: Vec<&str> = p.workers.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["runtime"]);

    // Nor is it taken from agents/ when the roster names nobody else.
    write(
        &r.path,
        ".squad/team.md",
        "# Squad Team\n\n## Coordinator\n\n| Name | Role | Notes |\n|---|---|---|\n| Lead | Architect | Routes work |\n",
    );
    write(
        &r.path,
        ".squad/agents/runtime/charter.md",
        "# Runtime — Engineer\n",
    );
    let p = discover(&r.path, &config()).unwrap().unwrap();
    let names: Vec<&str> = p.workers.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["runtime"]);
}
