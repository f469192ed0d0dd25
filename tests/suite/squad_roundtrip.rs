//! Round trips: preset -> team group -> preset, and Squad discover -> group -> export -> discover.

use std::fs;
use std::path::{Path, PathBuf};

use super::squad_support::{copy_dir, corpus};
use huddle::config::{Config, Paths};
use huddle::model::{Organization, Preset};
use huddle::presets::builtin::load_builtins;
use huddle::presets::squad::{ExportError, discover, export_group};
use huddle::presets::{create_team_group, preset_from_group};

/// A worker's name, display name, role and prompt.
type WorkerRow = (String, Option<String>, Option<String>, Option<String>);

/// What must survive a round trip: names, display names, roles, prompts, contexts, mode.
#[derive(Debug, PartialEq)]
struct Team {
    name: String,
    mode: String,
    workers: Vec<WorkerRow>,
    shared: Option<String>,
    routing: Option<String>,
}

fn team(p: &Preset) -> Team {
    Team {
        name: p.name.clone(),
        mode: p.mode.to_string(),
        workers: p
            .workers
            .iter()
            .map(|w| {
                (
                    w.name.clone(),
                    w.display_name.clone(),
                    w.role.clone(),
                    w.system_prompt.clone(),
                )
            })
            .collect(),
        shared: p.shared_context.clone(),
        routing: p.routing_context.clone(),
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn builtin_presets_survive_group_round_trip() {
    let config = Config::from_env(|_| None);
    let (presets, errors) = load_builtins(&config);
    assert!(errors.is_empty());
    let mut org = Organization::default();
    for p in &presets {
        let id = create_team_group(&mut org, p, &config, None);
        let back = preset_from_group(&org, &id).unwrap();
        assert_eq!(team(&back), team(p), "{}", p.name);
        assert_eq!(
            back.orchestrator.as_ref().and_then(|o| o.prompt.clone()),
            p.orchestrator.as_ref().and_then(|o| o.prompt.clone()),
            "{}",
            p.name
        );
        assert_eq!(
            back.evaluator.as_ref().and_then(|o| o.prompt.clone()),
            p.evaluator.as_ref().and_then(|o| o.prompt.clone())
        );
        // A relay's length is its `relay.max_turns`: its preset says no `max_iterations`.
        let iterations = (p.mode != huddle::model::Mode::Relay).then(|| p.max_iterations.unwrap_or(5));
        assert_eq!(back.max_iterations, iterations, "{}", p.name);
    }
}

#[test]
fn every_corpus_team_survives_discover_export_discover() {
    let config = Config::from_env(|_| None);
    let tmp = tempfile::tempdir().unwrap();
    let paths = Paths::single(tmp.path().join("home"));
    let mut folders: Vec<PathBuf> = fs::read_dir(corpus())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    assert_eq!(folders.len(), 21);
    for folder in folders {
        // Same folder name, so a `<repo> squad` fallback name stays the same.
        let repo = tmp.path().join("repos").join(folder.file_name().unwrap());
        copy_dir(&folder, &repo);
        let before = discover(&repo, &config).unwrap().unwrap();
        let mut org = Organization::default();
        let id = create_team_group(&mut org, &before, &config, Some(&repo));

        // Legacy `.ai-team/` teams are written back into their own folder, never a new `.squad/`.
        let team_dir = huddle::presets::squad::team_dir(&repo).unwrap();
        let legacy = team_dir.ends_with(".ai-team");
        // The team is unchanged, so nothing that exists is replaced (no force needed): team.md
        // is edited in place to itself, and only missing charters are created.
        let team_md = fs::read(team_dir.join("team.md")).unwrap();
        let existed: Vec<PathBuf> = walk(&repo);
        let report = export_group(&org, &id, &repo, &paths, false)
            .unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        assert_eq!(report.team_dir, team_dir, "{}", folder.display());
        assert_eq!(fs::read(team_dir.join("team.md")).unwrap(), team_md);
        assert_eq!(repo.join(".squad").exists(), !legacy, "{}", folder.display());
        for f in &report.written {
            assert!(
                !existed.contains(f),
                "{}: replaced {}",
                folder.display(),
                f.display()
            );
            assert!(
                f.ends_with("charter.md") || f.starts_with(paths.presets_dir()),
                "{}",
                f.display()
            );
        }
        // Ledgers the group holds only in shortened form are kept, never rewritten.
        for k in &report.kept {
            assert!(
                k.path.ends_with("decisions.md") || k.path.ends_with("routing.md"),
                "{}: {}",
                folder.display(),
                k.line()
            );
            assert!(existed.contains(&k.path));
        }
        // No file in the repo carries the cap marker.
        for f in walk(&repo) {
            let text = String::from_utf8_lossy(&fs::read(&f).unwrap()).into_owned();
            assert!(
                !(text.contains("\n\n[... ") && text.contains("more characters not included]")),
                "{}",
                f.display()
            );
        }
        let after = discover(&repo, &config).unwrap().unwrap();
        assert_eq!(team(&after), team(&before), "{}", folder.display());

        // A second export changes nothing.
        let again = export_group(&org, &id, &repo, &paths, false).unwrap();
        assert!(
            again.written.is_empty(),
            "{}: {:?}",
            folder.display(),
            again.written
        );
    }
}

/// Everything a preset says, with the defaults filled in (a value equal to the default and no
/// value are the same team) and prompts without trailing blanks (a YAML block keeps its last
/// newline, a charter read back does not: the prompt is the same).
fn everything(p: &Preset) -> (Team, Vec<Option<String>>, u32, u64) {
    let trimmed = |t: &Option<String>| t.as_deref().map(|t| t.trim_end().to_string());
    let agent_prompt =
        |a: &Option<huddle::model::PresetAgent>| a.as_ref().map(|a| trimmed(&a.prompt).unwrap_or_default());
    let mut team = team(p);
    for w in &mut team.workers {
        w.3 = trimmed(&w.3);
    }
    (
        team,
        vec![
            p.description.clone(),
            p.emoji.clone(),
            agent_prompt(&p.orchestrator),
            agent_prompt(&p.evaluator),
        ],
        p.max_iterations.unwrap_or(p.mode.spec().default_max_iterations),
        p.worker_timeout_secs.unwrap_or(600),
    )
}

#[test]
fn every_builtin_preset_survives_export_and_discovery_whole() {
    let config = Config::from_env(|_| None);
    let (builtins, errors) = load_builtins(&config);
    assert!(errors.is_empty(), "{errors:?}");
    for p in &builtins {
        let tmp = tempfile::tempdir().unwrap();
        let paths = Paths::single(tmp.path().join("home"));
        let repo = tmp.path().join("proj");
        fs::create_dir_all(&repo).unwrap();
        let mut org = Organization::default();
        let id = create_team_group(&mut org, p, &config, Some(&repo));
        export_group(&org, &id, &repo, &paths, false).unwrap();
        let back = discover(&repo, &config).unwrap().unwrap();
        assert_eq!(everything(&back), everything(p), "{}", p.name);
        assert!(back.warnings.is_empty(), "{}: {:?}", p.name, back.warnings);
        // The repo copy makes the same team group, and exporting that changes nothing in the
        // repo (the user preset it writes too may differ in form: trimmed prompts).
        let again = create_team_group(&mut org, &back, &config, Some(&repo));
        let report = export_group(&org, &again, &repo, &paths, true).unwrap();
        let written: Vec<_> = report.written.iter().filter(|f| f.starts_with(&repo)).collect();
        assert!(written.is_empty(), "{}: {written:?}", p.name);
    }
}

#[test]
fn export_writes_only_its_files_and_asks_before_changing_one() {
    let config = Config::from_env(|_| None);
    let tmp = tempfile::tempdir().unwrap();
    let paths = Paths::single(tmp.path().join("home"));
    let repo = tmp.path().join("proj");
    fs::create_dir_all(&repo).unwrap();
    let (builtins, _) = load_builtins(&config);
    let review = builtins.iter().find(|p| p.name == "Code Review Team").unwrap();
    let mut org = Organization::default();
    let id = create_team_group(&mut org, review, &config, Some(&repo));
    org.group_mut(&id).unwrap().shared_context = Some("We use Rust 2024.".into());

    // Files it does not own.
    fs::create_dir_all(repo.join(".squad/agents/security")).unwrap();
    fs::write(repo.join(".squad/agents/security/history.md"), "history").unwrap();
    fs::create_dir_all(repo.join(".squad/agents/zed")).unwrap();
    fs::write(repo.join(".squad/agents/zed/charter.md"), "# Zed — Other\n").unwrap();

    let report = export_group(&org, &id, &repo, &paths, false).unwrap();
    let names: Vec<String> = report
        .written
        .iter()
        .map(|p| p.strip_prefix(tmp.path()).unwrap().display().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "proj/.squad/team.md",
            "proj/.squad/agents/correctness/charter.md",
            "proj/.squad/agents/security/charter.md",
            "proj/.squad/agents/maintainability/charter.md",
            "proj/.squad/decisions.md",
            "proj/.squad/huddle.yaml",
            "home/presets/code-review-team.yaml",
        ]
    );
    let team_md = fs::read_to_string(repo.join(".squad/team.md")).unwrap();
    assert!(team_md.starts_with("# Code Review Team\n"), "{team_md}");
    assert!(team_md.contains("mode: orchestrator_reflect"), "{team_md}");
    assert!(team_md.contains("| Member | Role |"), "{team_md}");
    assert!(team_md.contains("| security | Security reviewer |"), "{team_md}");
    assert!(
        !repo.join(".squad/routing.md").exists(),
        "empty context writes no file"
    );
    assert_eq!(
        fs::read_to_string(repo.join(".squad/agents/security/history.md")).unwrap(),
        "history"
    );
    assert_eq!(
        fs::read_to_string(repo.join(".squad/agents/zed/charter.md")).unwrap(),
        "# Zed — Other\n"
    );

    // The user preset loads back as a valid preset.
    let (user, errors) = huddle::presets::user::load_user_presets(&paths.presets_dir(), &config);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(user[0].name, "Code Review Team");

    // Changing one prompt: without force, exactly that file is listed; with force, written.
    let s = org
        .sessions
        .iter_mut()
        .find(|s| s.name == "code-review-team-security")
        .unwrap();
    s.system_prompt = Some("You are a paranoid auditor. Trust nothing.".into());
    let err = export_group(&org, &id, &repo, &paths, false).unwrap_err();
    let ExportError::WouldOverwrite { files } = &err else {
        panic!("{err}");
    };
    assert_eq!(
        files,
        &[
            repo.join(".squad/agents/security/charter.md"),
            paths.presets_dir().join("code-review-team.yaml")
        ]
    );
    assert!(err.to_string().contains("agents/security/charter.md"), "{err}");
    export_group(&org, &id, &repo, &paths, true).unwrap();
    let back = discover(&repo, &config).unwrap().unwrap();
    let sec = back.workers.iter().find(|w| w.name == "security").unwrap();
    assert_eq!(
        sec.system_prompt.as_deref(),
        Some("You are a paranoid auditor. Trust nothing.")
    );
    assert_eq!(sec.role.as_deref(), Some("Security reviewer"));
    assert_eq!(back.shared_context.as_deref(), Some("We use Rust 2024."));
}

#[test]
fn role_comes_from_the_prompt_when_none_is_recorded() {
    let config = Config::from_env(|_| None);
    let tmp = tempfile::tempdir().unwrap();
    let paths = Paths::single(tmp.path().join("home"));
    let repo = tmp.path().join("proj");
    fs::create_dir_all(&repo).unwrap();
    let preset = huddle::presets::parse_preset(
        "name: Pair\nmode: broadcast\nworkers:\n  - { name: Pair-Coder, system_prompt: \"You are an careful coder. Go.\" }\n",
        Path::new("pair.yaml"),
        huddle::model::Tier::User,
        &config,
    )
    .unwrap();
    let mut org = Organization::default();
    let id = create_team_group(&mut org, &preset, &config, Some(&repo));
    export_group(&org, &id, &repo, &paths, false).unwrap();
    let back = discover(&repo, &config).unwrap().unwrap();
    assert_eq!(back.mode, huddle::model::Mode::Broadcast);
    assert_eq!(back.workers[0].name, "pair-coder");
    assert_eq!(back.workers[0].role.as_deref(), Some("careful coder"));
}

#[cfg(unix)]
#[test]
fn export_refuses_a_squad_folder_linked_outside_the_repo() {
    let config = Config::from_env(|_| None);
    let tmp = tempfile::tempdir().unwrap();
    let paths = Paths::single(tmp.path().join("home"));
    let repo = tmp.path().join("proj");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&repo).unwrap();
    fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, repo.join(".squad")).unwrap();
    let (builtins, _) = load_builtins(&config);
    let mut org = Organization::default();
    let id = create_team_group(&mut org, &builtins[0], &config, Some(&repo));
    let err = export_group(&org, &id, &repo, &paths, true).unwrap_err();
    assert!(matches!(err, ExportError::Unsafe { .. }), "{err}");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
}
