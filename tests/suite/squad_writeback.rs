//! Write-back into an existing Squad team: ledgers longer than the cap are never replaced by
//! their shortened copy, team.md is edited in place (only the worker rows of the roster change),
//! and charters are written back where they were found.

use std::fs;
use std::path::{Path, PathBuf};

use super::squad_support::{copy_dir, corpus_folder};
use huddle::config::{Config, Paths};
use huddle::model::{Organization, Role, Session};
use huddle::presets::squad::{discover, export_group};
use huddle::presets::{create_team_group, preset_from_group};

struct Fixture {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    paths: Paths,
    config: Config,
    org: Organization,
    group: String,
}

/// A copy of a corpus team, discovered and turned into a team group.
fn fixture(folder: &str) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join(folder);
    copy_dir(&corpus_folder(folder), &repo);
    let paths = Paths::single(tmp.path().join("home"));
    let config = Config::from_env(|_| None);
    let preset = discover(&repo, &config).unwrap().unwrap();
    let mut org = Organization::default();
    let group = create_team_group(&mut org, &preset, &config, Some(&repo));
    Fixture {
        tmp,
        repo,
        paths,
        config,
        org,
        group,
    }
}

fn worker_rows(repo: &Path, config: &Config) -> Vec<(String, Option<String>)> {
    let p = discover(repo, config).unwrap().unwrap();
    p.workers
        .iter()
        .map(|w| (w.name.clone(), w.role.clone()))
        .collect()
}

#[test]
fn force_never_replaces_a_ledger_with_its_capped_copy() {
    let f = fixture("DeathStapler__wfrp4e-char-gen");
    let ledger = f.repo.join(".squad/decisions.md");
    // The Scribe appends a decision after the team was loaded: the ledger no longer reads back
    // as the group's (capped) context.
    let mut text = fs::read_to_string(&ledger).unwrap();
    assert!(text.chars().count() > 30_000);
    text.push_str("\n### 2026-04-01: A new decision\nWe keep everything.\n");
    fs::write(&ledger, &text).unwrap();

    // Not a difference that needs force ...
    let report = export_group(&f.org, &f.group, &f.repo, &f.paths, false).unwrap();
    assert!(report.is_kept(&ledger), "{report:?}");
    assert!(!report.written.contains(&ledger), "{report:?}");
    assert_eq!(fs::read_to_string(&ledger).unwrap(), text);

    // ... and force does not touch it either.
    let report = export_group(&f.org, &f.group, &f.repo, &f.paths, true).unwrap();
    assert!(report.is_kept(&ledger), "{report:?}");
    assert_eq!(fs::read_to_string(&ledger).unwrap(), text);
    assert!(
        report
            .lines()
            .iter()
            .any(|l| l.starts_with("kept ") && l.contains("decisions.md")),
        "{:?}",
        report.lines()
    );
    drop(f.tmp);
}

#[test]
fn unchanged_team_leaves_team_md_byte_for_byte() {
    for folder in [
        "DeathStapler__wfrp4e-char-gen",
        "KaptenJon__HKA_Handball",
        "ormasoftchile__yawr",
        "bradygaster__squad",
    ] {
        let f = fixture(folder);
        let team_md = f.repo.join(".squad/team.md");
        let before = fs::read(&team_md).unwrap();
        let report = export_group(&f.org, &f.group, &f.repo, &f.paths, false)
            .unwrap_or_else(|e| panic!("{folder}: {e}"));
        assert!(report.unchanged.contains(&team_md), "{folder}: {report:?}");
        assert_eq!(fs::read(&team_md).unwrap(), before, "{folder}");
    }
}

#[test]
fn team_md_is_edited_in_place() {
    let mut f = fixture("DeathStapler__wfrp4e-char-gen");
    let team = "deathstapler-wfrp4e-char-gen-squad";
    // Jane changes role, Bullock leaves, Seth joins.
    let jane = f
        .org
        .sessions
        .iter_mut()
        .find(|s| s.name == format!("{team}-jane"))
        .unwrap();
    jane.member_role = Some("UI Lead".into());
    f.org.sessions.retain(|s| s.name != format!("{team}-bullock"));
    let mut seth = Session::new(format!("{team}-seth"), f.group.clone(), "sim/default");
    seth.role = Role::Worker;
    seth.team = true;
    seth.order = 100;
    seth.display_name = Some("Seth".into());
    seth.member_role = Some("Data Wrangler".into());
    seth.system_prompt = Some("You are Seth. You clean data.".into());
    f.org.sessions.push(seth);

    let original = fs::read_to_string(f.repo.join(".squad/team.md")).unwrap();
    export_group(&f.org, &f.group, &f.repo, &f.paths, true).unwrap();
    let edited = fs::read_to_string(f.repo.join(".squad/team.md")).unwrap();

    // Everything outside the worker rows is kept.
    for kept in [
        "# Squad Team\n\n> wfrp-char-gen\n\n## Coordinator\n",
        "| Squad | Coordinator | Routes work, enforces handoffs and reviewer gates. |",
        "| Swearengen | Lead / Architect | `.squad/agents/swearengen/charter.md` | ✅ Active |",
        "| Cochran | Tester | `.squad/agents/cochran/charter.md` | ✅ Active |",
        "| Scribe | Session Logger | `.squad/agents/scribe/charter.md` | ✅ Active |",
        "| Ralph | Work Monitor | `.squad/agents/ralph/charter.md` | 🔄 Monitor |",
        "## Project Context\n\n- **Project:** wfrp-char-gen\n",
        "- **Universe:** Deadwood",
    ] {
        assert!(edited.contains(kept), "lost {kept:?}:\n{edited}");
    }
    assert!(!edited.contains("mode:"), "{edited}");
    // The role cell changes, the other cells of the row stay.
    assert!(
        edited.contains("| Jane | UI Lead | `.squad/agents/jane/charter.md` | ✅ Active |"),
        "{edited}"
    );
    assert!(!edited.contains("Bullock"), "{edited}");
    // The new worker is a row of the same table, after the last one.
    let seth_row = edited.lines().find(|l| l.contains("Seth")).unwrap();
    assert_eq!(seth_row.matches('|').count(), 5, "{seth_row}");
    assert!(seth_row.contains("Data Wrangler"), "{seth_row}");
    let rows: Vec<&str> = edited.lines().filter(|l| l.starts_with("| ")).collect();
    let ralph = rows.iter().position(|l| l.contains("Ralph")).unwrap();
    assert_eq!(rows.get(ralph + 1), Some(&seth_row));
    // Nothing else moved: only the three rows differ.
    let removed: Vec<&str> = original
        .lines()
        .filter(|l| !edited.lines().any(|e| e == *l))
        .collect();
    assert_eq!(removed.len(), 2, "{removed:?}");

    // Reading it back gives the group's team.
    assert_eq!(
        worker_rows(&f.repo, &f.config),
        [
            ("swearengen".to_string(), Some("Lead / Architect".to_string())),
            ("jane".to_string(), Some("UI Lead".to_string())),
            ("cochran".to_string(), Some("Tester".to_string())),
            ("seth".to_string(), Some("Data Wrangler".to_string())),
        ]
    );
    let back = discover(&f.repo, &f.config).unwrap().unwrap();
    assert_eq!(back.description.as_deref(), Some("wfrp-char-gen"));
}

#[test]
fn mode_line_is_written_only_when_needed() {
    let mut f = fixture("DeathStapler__wfrp4e-char-gen");
    f.org.group_mut(&f.group).unwrap().mode = huddle::model::Mode::Broadcast;
    export_group(&f.org, &f.group, &f.repo, &f.paths, true).unwrap();
    let edited = fs::read_to_string(f.repo.join(".squad/team.md")).unwrap();
    assert!(edited.contains("\nmode: broadcast\n"), "{edited}");
    assert!(
        edited.starts_with("# Squad Team\n\n> wfrp-char-gen\n"),
        "{edited}"
    );
    let back = discover(&f.repo, &f.config).unwrap().unwrap();
    assert_eq!(back.mode, huddle::model::Mode::Broadcast);
    assert_eq!(back.description.as_deref(), Some("wfrp-char-gen"));

    // An existing mode line is updated in place.
    f.org.group_mut(&f.group).unwrap().mode = huddle::model::Mode::Sequential;
    export_group(&f.org, &f.group, &f.repo, &f.paths, true).unwrap();
    let edited = fs::read_to_string(f.repo.join(".squad/team.md")).unwrap();
    assert_eq!(edited.matches("mode:").count(), 1, "{edited}");
    assert!(edited.contains("\nmode: sequential\n"), "{edited}");
}

#[test]
fn charters_are_written_back_where_they_were_found() {
    let mut f = fixture("KaptenJon__HKA_Handball");
    let lisa = f
        .org
        .sessions
        .iter_mut()
        .find(|s| s.name.ends_with("-lisa-lösningslotsen"))
        .unwrap();
    lisa.system_prompt = Some("You are Lisa. You lead.".into());
    let err = export_group(&f.org, &f.group, &f.repo, &f.paths, false).unwrap_err();
    let huddle::presets::squad::ExportError::WouldOverwrite { files } = &err else {
        panic!("{err}");
    };
    assert!(
        files.contains(&f.repo.join(".squad/agents/lisa/charter.md")),
        "{files:?}"
    );
    let report = export_group(&f.org, &f.group, &f.repo, &f.paths, true).unwrap();
    assert!(
        report
            .written
            .contains(&f.repo.join(".squad/agents/lisa/charter.md")),
        "{report:?}"
    );
    assert!(!f.repo.join(".squad/agents/lisa-lösningslotsen").exists());
    let folders: Vec<String> = fs::read_dir(f.repo.join(".squad/agents"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(folders.len(), 12, "{folders:?}");
    assert_eq!(
        fs::read_to_string(f.repo.join(".squad/agents/lisa/charter.md")).unwrap(),
        "You are Lisa. You lead.\n"
    );
    let back = discover(&f.repo, &f.config).unwrap().unwrap();
    let lisa = back
        .workers
        .iter()
        .find(|w| w.name == "lisa-lösningslotsen")
        .unwrap();
    assert_eq!(lisa.system_prompt.as_deref(), Some("You are Lisa. You lead."));
}

#[test]
fn description_survives_group_and_fresh_export() {
    let f = fixture("ormasoftchile__yawr");
    let before = discover(&f.repo, &f.config).unwrap().unwrap();
    assert_eq!(
        before.description.as_deref(),
        Some("Lightweight workflow runtime")
    );
    let group = f.org.group(&f.group).unwrap();
    assert_eq!(group.description.as_deref(), Some("Lightweight workflow runtime"));
    let back = preset_from_group(&f.org, &f.group).unwrap();
    assert_eq!(back.description, before.description);

    // Into a repo with no team yet: a fresh team.md with the tagline.
    let other = f.tmp.path().join("fresh");
    fs::create_dir_all(&other).unwrap();
    export_group(&f.org, &f.group, &other, &f.paths, true).unwrap();
    let fresh = fs::read_to_string(other.join(".squad/team.md")).unwrap();
    assert!(fresh.contains("\n> Lightweight workflow runtime\n"), "{fresh}");
    let again = discover(&other, &f.config).unwrap().unwrap();
    assert_eq!(again.description, before.description);
    assert_eq!(again.workers.len(), before.workers.len());
}

#[test]
fn an_edited_team_md_keeps_its_bom_and_line_endings() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("proj");
    let team_md = repo.join(".squad/team.md");
    fs::create_dir_all(team_md.parent().unwrap()).unwrap();
    fs::write(
        &team_md,
        "\u{feff}# Squad Team — Crew\r\n\r\n## Members\r\n\r\n| Name | Role |\r\n|---|---|\r\n| Ann | Dev |\r\n| Scribe | Logger |\r\n",
    )
    .unwrap();
    let config = Config::from_env(|_| None);
    let paths = Paths::single(tmp.path().join("home"));
    let preset = discover(&repo, &config).unwrap().unwrap();
    let mut org = Organization::default();
    let id = create_team_group(&mut org, &preset, &config, Some(&repo));
    org.sessions
        .iter_mut()
        .find(|s| s.name == "crew-ann")
        .unwrap()
        .member_role = Some("Lead Dev".into());
    export_group(&org, &id, &repo, &paths, true).unwrap();
    assert_eq!(
        fs::read_to_string(&team_md).unwrap(),
        "\u{feff}# Squad Team — Crew\r\n\r\n## Members\r\n\r\n| Name | Role |\r\n|---|---|\r\n| Ann | Lead Dev |\r\n| Scribe | Logger |\r\n"
    );
}

#[test]
fn the_plan_is_what_the_export_does() {
    let mut f = fixture("KaptenJon__HKA_Handball");
    // Unchanged team: nothing to create or change.
    let plan = huddle::presets::squad::plan_export(&f.org, &f.group, &f.repo, &f.paths).unwrap();
    assert!(plan.change.is_empty(), "{plan:?}");
    assert!(
        plan.unchanged.iter().any(|p| p.ends_with(".squad/team.md")),
        "{plan:?}"
    );
    // A changed prompt: the plan names that charter as a change, and export without force
    // refuses with exactly the planned changes.
    let worker = f
        .org
        .sessions
        .iter()
        .position(|s| s.role == Role::Worker)
        .unwrap();
    f.org.sessions[worker].system_prompt = Some("You are changed.".into());
    let plan = huddle::presets::squad::plan_export(&f.org, &f.group, &f.repo, &f.paths).unwrap();
    assert_eq!(plan.change.len(), 1, "{plan:?}");
    match export_group(&f.org, &f.group, &f.repo, &f.paths, false) {
        Err(huddle::presets::squad::ExportError::WouldOverwrite { files }) => assert_eq!(files, plan.change),
        other => panic!("{other:?}"),
    }
    let _ = Session::new("unused", "", "sim/x");
}
