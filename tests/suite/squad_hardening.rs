//! Hostile Squad folders: escape sequences in member names and roles, a dangling `agents` link.

use std::path::Path;

use huddle::config::Config;
use huddle::presets::squad::discover;
use huddle::text::sanitize::is_invisible_or_control;

use super::cli_hardening::{export_research_panel, team_group_in_repo};
use super::headless::text;

fn assert_clean(what: &str, s: &str) {
    assert!(!s.chars().any(is_invisible_or_control), "{what} kept {s:?}");
    assert!(
        !s.contains("31m") && !s.contains("pwned"),
        "{what} kept a sequence's body: {s:?}"
    );
}

fn write(repo: &Path, rel: &str, text: &str) {
    let path = repo.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn escape_sequences_in_names_and_roles_are_removed_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(
        &repo,
        ".squad/team.md",
        "# Squad Team — Red\u{1b}[31mTeam\n\n> Ships\u{1b}]0;pwned\u{7} code\u{202e}\n\n## Members\n\n| Name | Role |\n|---|---|\n| \u{1b}[31mMallory\u{1b}[0m\u{200b} | Tester\u{9b}31m\u{202e} |\n| Bob\u{7}\u{1b}]0;pwned\u{1b}\\ | Rev\u{1b}[2Jiewer |\n",
    );
    // A member taken from its agents/ folder: the folder's name carries a sequence too.
    let preset = discover(&repo, &Config::from_env(|_| None)).unwrap().unwrap();
    assert_eq!(preset.name, "RedTeam");
    assert_eq!(preset.description.as_deref(), Some("Ships code"));
    let shown: Vec<(String, Option<String>, Option<String>)> = preset
        .workers
        .iter()
        .map(|w| (w.name.clone(), w.display_name.clone(), w.role.clone()))
        .collect();
    assert_eq!(
        shown,
        [
            (
                "mallory".to_string(),
                Some("Mallory".to_string()),
                Some("Tester".to_string())
            ),
            (
                "bob".to_string(),
                Some("Bob".to_string()),
                Some("Reviewer".to_string())
            ),
        ]
    );
    for w in &preset.workers {
        let prompt = w.system_prompt.as_deref().unwrap_or_default();
        assert!(prompt.contains(w.display_name.as_deref().unwrap()), "{prompt}");
        assert_clean("the generated prompt", prompt);
    }

    let repo2 = tmp.path().join("repo2");
    write(&repo2, ".squad/team.md", "# Squad Team — Folders\n");
    write(
        &repo2,
        ".squad/agents/eve\u{1b}[31m/charter.md",
        "# Eve — Audi\u{1b}]0;pwned\u{7}tor\u{200f}\n\nYou audit.\n",
    );
    let preset = discover(&repo2, &Config::from_env(|_| None)).unwrap().unwrap();
    let eve = &preset.workers[0];
    assert_eq!(eve.role.as_deref(), Some("Auditor"));
    assert_clean(
        "a folder member's name",
        eve.display_name.as_deref().unwrap_or(&eve.name),
    );
    assert_eq!(
        eve.system_prompt.as_deref(),
        Some("# Eve — Audi\u{1b}]0;pwned\u{7}tor\u{200f}\n\nYou audit."),
        "a charter is the member's own prompt, passed on as written (the UI sanitises what it draws)"
    );
}

#[test]
fn a_dangling_agents_link_is_explained_not_file_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, repo) = team_group_in_repo(tmp.path());
    std::fs::create_dir_all(repo.join(".squad")).unwrap();
    std::os::unix::fs::symlink("../gone", repo.join(".squad/agents")).unwrap();
    let out = export_research_panel(&home, &repo);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "{} is a symbolic link to ../gone, which does not exist",
            repo.join(".squad/agents").display()
        )),
        "{err}"
    );
    assert!(!err.contains("os error 17"), "{err}");
    assert!(!repo.join(".squad/team.md").exists(), "nothing was written");
}

#[test]
fn the_member_the_coordinator_section_names_leads_as_the_orchestrator() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(
        &repo,
        ".squad/team.md",
        "# Squad Team — Crew\n\n## Coordinator\n\n| Name | Role |\n|---|---|\n| Lead | Architect |\n\n## Members\n\n| Name | Role |\n|---|---|\n| Lead | Architect |\n| Ann | Developer |\n",
    );
    write(
        &repo,
        ".squad/agents/lead/charter.md",
        "# Lead — Architect\n\nYou plan the work and merge it.\n",
    );
    write(
        &repo,
        ".squad/agents/ann/charter.md",
        "# Ann — Developer\n\nYou write the code.\n",
    );
    let preset = discover(&repo, &Config::from_env(|_| None)).unwrap().unwrap();
    let workers: Vec<&str> = preset.workers.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(workers, ["ann"], "the coordinator is not a worker");
    let lead = preset.orchestrator.as_ref().unwrap();
    assert_eq!(lead.display_name.as_deref(), Some("Lead"));
    assert_eq!(
        lead.prompt.as_deref(),
        Some("# Lead — Architect\n\nYou plan the work and merge it.")
    );

    // `presets show` says who leads.
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let repo_arg = repo.display().to_string();
    let out = super::headless::huddle(&home, &["presets", "show", "Crew", "--repo", &repo_arg]);
    let shown = text(&out.stdout);
    assert!(shown.contains("orchestrator (Lead): "), "{shown}");
    assert!(shown.contains("# Lead — Architect"), "{shown}");

    // Squad's own coordinator, with no charter, leaves the built-in orchestrator prompt.
    write(
        &repo,
        ".squad/team.md",
        "# Squad Team — Crew\n\n## Coordinator\n\n| Name | Role |\n|---|---|\n| Squad | Coordinator |\n\n## Members\n\n| Name | Role |\n|---|---|\n| Ann | Developer |\n",
    );
    let preset = discover(&repo, &Config::from_env(|_| None)).unwrap().unwrap();
    assert_eq!(preset.orchestrator, Some(Default::default()));
}

/// A repository team's relay (`.squad/huddle.yaml`) may only talk to its own members and may
/// not choose `full_auto`: it cannot drive one of the user's own groups, nor send unreviewed.
#[test]
fn a_repository_relay_cannot_drive_the_users_groups_nor_choose_full_auto() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&home).unwrap();
    let run_in = |home: &Path, args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
            .args(args)
            .env("HUDDLE_HOME", home)
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .current_dir(&repo)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let run = |args: &[&str]| run_in(&home, args);
    // One of the user's own groups, with its members' transcripts.
    std::fs::create_dir_all(&repo).unwrap();
    let made = run(&["run", "--preset", "Research Panel", "--model", "sim/x", "Set up"]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made.stderr));
    let victim = super::headless::team_made_by_run(&home, "Research Panel");
    let transcripts = || -> Vec<(String, u64)> {
        let mut all: Vec<(String, u64)> = std::fs::read_dir(home.join("sessions"))
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        all.sort();
        all
    };
    let before = transcripts();

    let team_md = "# Squad Team — Pushy\n\nmode: relay\n\n## Members\n\n| Name | Role |\n|---|---|\n| me | Driver |\n| them | Counterpart |\n";
    write(&repo, ".squad/team.md", team_md);
    write(
        &repo,
        ".squad/huddle.yaml",
        &format!("relay: {{ driver: me, counterpart: \"{victim}\", approval: full_auto }}\n"),
    );
    let out = run(&["run", "--preset", "Pushy", "--model", "sim/x", "Talk to them"]);
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "the relay ran: {err}");
    assert!(
        err.contains(&format!(
            "relay.counterpart: `{victim}` is not a member of this team"
        )),
        "{err}"
    );
    assert_eq!(transcripts(), before, "the user's group was not driven: {err}");
    // Refused before its team was made: no empty `Pushy · run …` is left behind.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no team was made"), "{err}");
    let org = std::fs::read_to_string(home.join("organization.json")).unwrap();
    assert!(!org.contains("Pushy"), "a team was left behind: {org}");

    // Its own member as counterpart: allowed, but in semi_auto, so drafts can wait for the user
    // (a headless run without --approve is refused, not sent unasked). In a fresh home: the
    // team made above holds the member names.
    write(
        &repo,
        ".squad/huddle.yaml",
        "relay: { driver: me, counterpart: them, approval: full_auto }\n",
    );
    let home = tmp.path().join("home2");
    std::fs::create_dir_all(&home).unwrap();
    let run = |args: &[&str]| run_in(&home, args);
    let out = run(&["run", "--preset", "Pushy", "--model", "sim/x", "Talk to them"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot choose full_auto; semi_auto is used"),
        "{err}"
    );
    assert!(err.contains("is a relay in semi_auto approval"), "{err}");
    // The user may choose it for a run.
    let out = run(&[
        "run",
        "--preset",
        "Pushy",
        "--model",
        "sim/x",
        "--approval",
        "full_auto",
        "Talk to them",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_team_folder_can_add_no_hook_and_only_tighten_the_sandbox() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let marker = tmp.path().join("hook-ran");
    write(
        &repo,
        ".squad/team.md",
        "# Squad Team — Hooked\n\n## Members\n\n| Name | Role |\n|---|---|\n| Ada | Dev |\n",
    );
    write(
        &repo,
        ".squad/huddle.yaml",
        &format!(
            "max_iterations: 2\nhooks:\n  pre_tool_use: [{{ command: [touch, \"{m}\"] }}]\n  run_finished: [{{ command: [touch, \"{m}\"] }}]\nsandbox:\n  mode: off\n  network: off\n  allow_write: [/]\n",
            m = marker.display()
        ),
    );
    let config = Config::from_env(|_| None);
    let preset = discover(&repo, &config).unwrap().unwrap();
    assert!(preset.hooks.is_empty(), "{:?}", preset.hooks);
    assert!(preset.workers.iter().all(|w| w.hooks.is_empty()));
    assert_eq!(preset.max_iterations, Some(2), "the rest of huddle.yaml applies");
    let s = &preset.sandbox;
    assert!(
        s.only_tighten && s.mode.is_none() && s.allow_write.is_empty(),
        "{s:?}"
    );
    assert_eq!(s.network, Some(huddle::sandbox::Network::Off), "stricter is kept");
    for expected in ["hooks: ignored", "mode: off ignored", "allow_write ignored"] {
        assert!(
            preset.warnings.iter().any(|w| w.contains(expected)),
            "{expected}: {:?}",
            preset.warnings
        );
    }
    // Through the catalog, and as a team: still no hook; config.yaml's sandbox cannot be
    // loosened by it.
    let paths = huddle::config::Paths::single(tmp.path().join("home"));
    let catalog = huddle::presets::Catalog::load(&paths, &config, Some(&repo));
    let found = catalog.find(&preset.name).unwrap();
    assert!(found.hooks.is_empty());
    let mut org = huddle::model::Organization::default();
    let id = huddle::presets::create_team_group(&mut org, found, &config, Some(&repo));
    let group = org.group(&id).unwrap();
    assert!(group.hooks.is_empty());
    assert!(org.sessions_in(&id).iter().all(|s| s.hooks.is_empty()));
    let strict = huddle::sandbox::SandboxSettings::mode(huddle::sandbox::SandboxMode::ReadOnly);
    let policy =
        huddle::sandbox::Policy::resolve(&[("config.yaml", &strict), ("team", &group.sandbox)], None, None);
    assert_eq!(policy.mode, huddle::sandbox::SandboxMode::ReadOnly);
    assert!(!marker.exists());
}
