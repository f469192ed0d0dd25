//! Write-back guards: the team folder discovery uses, charters longer than the prompt cap and
//! front matter, ledgers that changed on disk, a confirmed plan, rows never added to a human
//! table, text that is not UTF-8, and a `mode:` line discovery cannot parse.

use std::fs;
use std::path::{Path, PathBuf};

use super::squad_support::{copy_dir, corpus_folder};
use huddle::config::{Config, Paths};
use huddle::model::{Mode, Organization, Role, Session};
use huddle::presets::create_team_group;
use huddle::presets::squad::{ExportError, discover, export_group, export_group_confirmed, plan_export};

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(snapshot(&path));
        } else {
            files.push((path.clone(), fs::read(&path).unwrap()));
        }
    }
    files.sort();
    files
}

struct Fixture {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    paths: Paths,
    config: Config,
    org: Organization,
    group: String,
}

impl Fixture {
    /// A repo whose team folder is a copy of a corpus team.
    fn corpus(folder: &str) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join(folder);
        copy_dir(&corpus_folder(folder), &repo);
        Fixture::discovered(tmp, repo)
    }

    /// A repo with these files (relative path, bytes) in it.
    fn files(files: &[(&str, &[u8])]) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("proj");
        for (rel, bytes) in files {
            let path = repo.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, bytes).unwrap();
        }
        Fixture::discovered(tmp, repo)
    }

    fn discovered(tmp: tempfile::TempDir, repo: PathBuf) -> Fixture {
        let paths = Paths::single(tmp.path().join("home"));
        let config = Config::from_env(|_| None);
        let preset = discover(&repo, &config).unwrap().unwrap();
        let mut org = Organization::default();
        let group = create_team_group(&mut org, &preset, &config, Some(&repo));
        Fixture {
            _tmp: tmp,
            repo,
            paths,
            config,
            org,
            group,
        }
    }

    fn worker(&mut self, name: &str) -> &mut Session {
        let suffix = format!("-{name}");
        self.org
            .sessions
            .iter_mut()
            .find(|s| s.role == Role::Worker && s.name.ends_with(&suffix))
            .unwrap_or_else(|| panic!("no worker {name}"))
    }

    fn export(&self, force: bool) -> Result<huddle::presets::squad::ExportReport, ExportError> {
        export_group(&self.org, &self.group, &self.repo, &self.paths, force)
    }

    fn lines(&self, force: bool) -> Vec<String> {
        self.export(force).unwrap().lines()
    }
}

fn has_line(lines: &[String], start: &str, file: &str, reason: &str) -> bool {
    lines
        .iter()
        .any(|l| l.starts_with(start) && l.contains(file) && l.contains(reason))
}

#[test]
fn a_legacy_team_is_written_back_into_its_own_folder() {
    let mut f = Fixture::corpus("microsoft__edge-ai");
    let before = snapshot(&f.repo);
    // Unchanged: no `.squad` appears beside it and no file changes (the long decisions.md the
    // group holds only in capped form included).
    let report = f.export(false).unwrap();
    assert!(!f.repo.join(".squad").exists(), "{report:?}");
    assert_eq!(report.team_dir, f.repo.join(".ai-team"));
    let after = snapshot(&f.repo);
    for (path, bytes) in &before {
        let now = after.iter().find(|(p, _)| p == path).map(|(_, b)| b);
        assert_eq!(now, Some(bytes), "{} changed", path.display());
    }
    assert!(
        report.unchanged.contains(&f.repo.join(".ai-team/team.md")),
        "{report:?}"
    );

    // An edited prompt goes to the legacy team's charter, and discovery reads it back.
    let name = f
        .org
        .sessions
        .iter()
        .find(|s| s.role == Role::Worker)
        .unwrap()
        .name
        .clone();
    f.org
        .sessions
        .iter_mut()
        .find(|s| s.name == name)
        .unwrap()
        .system_prompt = Some("You are edited. Check it.".into());
    let report = f.export(true).unwrap();
    assert!(!f.repo.join(".squad").exists(), "{report:?}");
    assert!(
        report
            .written
            .iter()
            .any(|p| p.starts_with(f.repo.join(".ai-team/agents"))),
        "{report:?}"
    );
    let back = discover(&f.repo, &f.config).unwrap().unwrap();
    assert!(
        back.workers
            .iter()
            .any(|w| w.system_prompt.as_deref() == Some("You are edited. Check it.")),
        "{:?}",
        back.workers
    );

    // A missing ledger is never created from the capped copy.
    let ledger = f.repo.join(".ai-team/decisions.md");
    fs::remove_file(&ledger).unwrap();
    let lines = f.lines(true);
    assert!(!ledger.exists(), "{lines:?}");
    assert!(
        has_line(&lines, "skipped ", "decisions.md", "shortened copy"),
        "{lines:?}"
    );
}

#[test]
fn a_capped_ledger_is_never_written_into_a_new_repo() {
    let f = Fixture::corpus("microsoft__edge-ai");
    let other = f.repo.parent().unwrap().join("elsewhere");
    fs::create_dir_all(&other).unwrap();
    let report = export_group(&f.org, &f.group, &other, &f.paths, true).unwrap();
    assert!(other.join(".squad/team.md").exists());
    assert!(!other.join(".squad/decisions.md").exists(), "{report:?}");
    for (path, bytes) in snapshot(&other) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("more characters not included]"),
            "{} carries the cap marker",
            path.display()
        );
    }
}

#[test]
fn a_charter_longer_than_the_cap_is_kept_whole() {
    let mut f = Fixture::corpus("Azure__AgentBaker");
    let charter = f.repo.join(".squad/agents/keaton/charter.md");
    let original = fs::read(&charter).unwrap();
    assert!(original.len() > 5_000);
    f.worker("keaton").system_prompt = Some("You are Keaton. Shorter now.".into());
    // Not a difference that needs force, and force does not cut it either.
    let lines = f.lines(false);
    assert!(
        has_line(&lines, "kept ", "keaton/charter.md", "4000"),
        "{lines:?}"
    );
    let lines = f.lines(true);
    assert!(
        has_line(&lines, "kept ", "keaton/charter.md", "4000"),
        "{lines:?}"
    );
    assert_eq!(fs::read(&charter).unwrap(), original);
    let plan = plan_export(&f.org, &f.group, &f.repo, &f.paths).unwrap();
    assert!(!plan.change.contains(&charter), "{plan:?}");
}

#[test]
fn a_charter_keeps_its_front_matter() {
    let mut f = Fixture::corpus("tamirdresher__squad-for-kids");
    let charter = f.repo.join(".squad/agents/maria/charter.md");
    let original = fs::read_to_string(&charter).unwrap();
    let front_end = original[4..].find("\n---\n").unwrap() + 4 + 5;
    let front = &original[..front_end];
    assert!(front.contains("tools: ["), "{front}");
    f.worker("maria").system_prompt = Some("# Maria\n\nYou are Maria. You review templates.".into());
    f.export(true).unwrap();
    let written = fs::read_to_string(&charter).unwrap();
    assert!(written.starts_with(front), "{written}");
    assert!(
        written.ends_with("\n# Maria\n\nYou are Maria. You review templates.\n"),
        "{written}"
    );
    let back = discover(&f.repo, &f.config).unwrap().unwrap();
    let maria = back.workers.iter().find(|w| w.name == "maria").unwrap();
    assert_eq!(
        maria.system_prompt.as_deref(),
        Some("# Maria\n\nYou are Maria. You review templates.")
    );
    // Written back once, it is unchanged the next time.
    let report = f.export(false).unwrap();
    assert!(report.unchanged.contains(&charter), "{report:?}");
}

#[test]
fn force_never_rolls_back_a_ledger_changed_on_disk() {
    let mut f = Fixture::corpus("ormasoftchile__yawr");
    let ledger = f.repo.join(".squad/decisions.md");
    let mut text = fs::read_to_string(&ledger).unwrap();
    text.push_str("\n### A decision taken after the team was loaded\n");
    fs::write(&ledger, &text).unwrap();
    // The ledger alone is no reason to ask for force.
    let lines = f.lines(false);
    assert!(
        has_line(
            &lines,
            "kept ",
            "decisions.md",
            "changed on disk; huddle never overwrites a ledger"
        ),
        "{lines:?}"
    );
    // A charter needs force; the ledger is still kept.
    let name = f
        .org
        .sessions
        .iter()
        .find(|s| s.role == Role::Worker)
        .unwrap()
        .name
        .clone();
    f.org
        .sessions
        .iter_mut()
        .find(|s| s.name == name)
        .unwrap()
        .system_prompt = Some("You are changed.".into());
    assert!(matches!(f.export(false), Err(ExportError::WouldOverwrite { .. })));
    let plan = plan_export(&f.org, &f.group, &f.repo, &f.paths).unwrap();
    assert!(!plan.change.contains(&ledger), "{plan:?}");
    let lines = f.lines(true);
    assert!(
        has_line(&lines, "kept ", "decisions.md", "changed on disk"),
        "{lines:?}"
    );
    assert_eq!(fs::read_to_string(&ledger).unwrap(), text);
}

#[test]
fn a_confirmed_export_refuses_files_changed_since_the_plan() {
    let mut f = Fixture::corpus("ormasoftchile__yawr");
    let workers: Vec<String> = f
        .org
        .sessions
        .iter()
        .filter(|s| s.role == Role::Worker)
        .map(|s| s.name.clone())
        .collect();
    f.org
        .sessions
        .iter_mut()
        .find(|s| s.name == workers[0])
        .unwrap()
        .system_prompt = Some("You are changed.".into());
    let plan = plan_export(&f.org, &f.group, &f.repo, &f.paths).unwrap();
    assert!(!plan.change.is_empty());
    let before = snapshot(&f.repo);
    // While the dialog is open, someone edits another worker's charter.
    let back = discover(&f.repo, &f.config).unwrap().unwrap();
    let second = &back.workers[1].name;
    let other = fs::read_dir(f.repo.join(".squad/agents"))
        .unwrap()
        .map(|e| e.unwrap().path().join("charter.md"))
        .find(|p| {
            p.parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_lowercase()
                == *second
        })
        .unwrap();
    fs::write(&other, "# Edited on disk\n\nNew words.\n").unwrap();
    let err = export_group_confirmed(&f.org, &f.group, &f.repo, &f.paths, &plan.change).unwrap_err();
    let ExportError::Unconfirmed { files } = &err else {
        panic!("{err}");
    };
    assert_eq!(files, std::slice::from_ref(&other));
    // Nothing was written, not even the confirmed files.
    for (path, bytes) in before.iter().filter(|(p, _)| *p != other) {
        assert_eq!(&fs::read(path).unwrap(), bytes, "{}", path.display());
    }
    assert_eq!(
        fs::read_to_string(&other).unwrap(),
        "# Edited on disk\n\nNew words.\n"
    );
    // Once that file is confirmed too, the export goes ahead.
    let mut confirmed = plan.change.clone();
    confirmed.push(other.clone());
    let report = export_group_confirmed(&f.org, &f.group, &f.repo, &f.paths, &confirmed).unwrap();
    assert!(report.written.contains(&other), "{report:?}");
}

const HUMANS_ONLY: &str = "# Crew\n\n## Human Members\n\n| Name | Role |\n|---|---|\n| Dina | PM |\n";

#[test]
fn new_workers_never_join_a_human_table() {
    let mut f = Fixture::files(&[
        (".squad/team.md", HUMANS_ONLY.as_bytes()),
        (
            ".squad/agents/ann/charter.md",
            b"# Ann \xE2\x80\x94 Developer\n\nYou build.\n",
        ),
    ]);
    // Unchanged, the file stays as it is.
    f.export(false).unwrap();
    assert_eq!(
        fs::read_to_string(f.repo.join(".squad/team.md")).unwrap(),
        HUMANS_ONLY
    );

    let mut bob = Session::new("crew-bob", f.group.clone(), "sim/default");
    bob.role = Role::Worker;
    bob.team = true;
    bob.order = 100;
    bob.display_name = Some("Bob".into());
    bob.member_role = Some("Tester".into());
    bob.system_prompt = Some("You are Bob. You test.".into());
    f.org.sessions.push(bob);
    f.export(true).unwrap();
    let edited = fs::read_to_string(f.repo.join(".squad/team.md")).unwrap();
    assert!(edited.starts_with(HUMANS_ONLY), "{edited}");
    assert!(edited.contains("\n## Members\n"), "{edited}");
    let back = discover(&f.repo, &f.config).unwrap().unwrap();
    let got: Vec<(&str, Option<&str>)> = back
        .workers
        .iter()
        .map(|w| (w.name.as_str(), w.role.as_deref()))
        .collect();
    assert_eq!(got, [("ann", Some("Developer")), ("bob", Some("Tester"))]);
    let _ = f.worker("ann");
}

#[test]
fn a_team_md_that_is_not_utf8_is_never_edited() {
    let latin1: &[u8] = b"# Caf\xE9 Crew\n\n## Members\n\n| Name | Role |\n|---|---|\n| Ann | Dev |\n";
    let mut f = Fixture::files(&[(".squad/team.md", latin1)]);
    let team_md = f.repo.join(".squad/team.md");
    // Unchanged: not written.
    f.export(false).unwrap();
    assert_eq!(fs::read(&team_md).unwrap(), latin1);
    // Changed: still not written, and the report says why.
    f.worker("ann").member_role = Some("Lead".into());
    let lines = f.lines(true);
    assert_eq!(fs::read(&team_md).unwrap(), latin1);
    assert!(has_line(&lines, "kept ", "team.md", "UTF-8"), "{lines:?}");
}

#[test]
fn a_binary_team_md_is_never_replaced() {
    let ok = Fixture::files(&[(
        ".squad/team.md",
        b"# Crew\n\n| Name | Role |\n|---|---|\n| Ann | Dev |\n",
    )]);
    let binary: &[u8] = b"# Crew\n\0\0\x01| Name | Role |\n";
    let team_md = ok.repo.join(".squad/team.md");
    fs::write(&team_md, binary).unwrap();
    let lines = ok.lines(true);
    assert_eq!(fs::read(&team_md).unwrap(), binary);
    assert!(has_line(&lines, "kept ", "team.md", "binary"), "{lines:?}");
}

#[test]
fn a_charter_that_is_not_utf8_is_never_edited() {
    let charter: &[u8] = b"# Ann\n\nYou write caf\xE9 menus.\n";
    let mut f = Fixture::files(&[
        (
            ".squad/team.md",
            b"# Crew\n\n| Name | Role |\n|---|---|\n| Ann | Dev |\n",
        ),
        (".squad/agents/ann/charter.md", charter),
    ]);
    f.worker("ann").system_prompt = Some("You are Ann. New.".into());
    let lines = f.lines(true);
    assert_eq!(
        fs::read(f.repo.join(".squad/agents/ann/charter.md")).unwrap(),
        charter
    );
    assert!(has_line(&lines, "kept ", "ann/charter.md", "UTF-8"), "{lines:?}");
}

#[test]
fn a_mode_line_discovery_cannot_read_is_left_alone() {
    let text = "# Crew\n\n- **Mode:** autonomous, the coordinator decides\n\n| Name | Role |\n|---|---|\n| Ann | Dev |\n";
    let mut f = Fixture::files(&[(".squad/team.md", text.as_bytes())]);
    let team_md = f.repo.join(".squad/team.md");
    let report = f.export(false).unwrap();
    assert!(report.unchanged.contains(&team_md), "{report:?}");
    assert_eq!(fs::read_to_string(&team_md).unwrap(), text);
    // A mode the team really has is still written.
    f.org.group_mut(&f.group).unwrap().mode = Mode::Broadcast;
    f.export(true).unwrap();
    let edited = fs::read_to_string(&team_md).unwrap();
    assert!(edited.contains("- **Mode:** broadcast\n"), "{edited}");
    assert_eq!(
        discover(&f.repo, &f.config).unwrap().unwrap().mode,
        Mode::Broadcast
    );
}
