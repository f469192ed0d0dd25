//! What is on disk against what `organization.json` records, at every start and in
//! `huddle doctor`: worktrees whose folder vanished (removed by hand), and orphans (a folder in
//! the worktrees folder, or a `huddle/` branch, that no session records: a crash between
//! `git worktree add` and the save, or a worktree kept when its team was deleted). Findings are
//! reported; nothing is ever deleted here.

use std::fmt;
use std::path::{Path, PathBuf};

use super::git::{Git, Layout};
use super::plan::branch_prefix;
use super::remove::same_dir;
use super::{Worktree, WorktreeError, distinct};
use crate::model::Organization;

/// One thing the user should look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// A recorded worktree's folder is gone; its sessions' turns cannot run there.
    Vanished {
        sessions: Vec<String>,
        worktree: Worktree,
    },
    /// A folder in the worktrees folder that no session records.
    OrphanFolder { path: PathBuf, branch: Option<String> },
    /// A `huddle/` branch that no session records and no orphan folder has checked out.
    OrphanBranch { repo: PathBuf, branch: String },
    /// Something could not be checked (git missing, a repository gone).
    Unchecked(String),
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Vanished { sessions, worktree } => write!(
                f,
                "the worktree of {} is gone: {} (branch {}, kept); `huddle worktrees remove --session {}` forgets it",
                sessions.join(", "),
                worktree.path.display(),
                worktree.branch,
                sessions.first().map(String::as_str).unwrap_or("NAME")
            ),
            Finding::OrphanFolder { path, branch } => write!(
                f,
                "a worktree no session records: {}{} (left by a crash, or kept when its team was deleted); nothing was deleted: `huddle worktrees diff --path {p}` shows its work, `merge --path {p}` brings it in, `remove --path {p}` removes it",
                path.display(),
                branch
                    .as_deref()
                    .map(|b| format!(", branch {b}"))
                    .unwrap_or_default(),
                p = path.display()
            ),
            Finding::OrphanBranch { repo, branch } => write!(
                f,
                "a branch no session records: {branch} in {}; nothing was deleted (`git -C {} log {branch}` shows it, `git branch -D {branch}` removes it)",
                repo.display(),
                repo.display()
            ),
            Finding::Unchecked(why) => write!(f, "worktrees could not be checked: {why}"),
        }
    }
}

/// Every finding, in a stable order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    pub findings: Vec<Finding>,
}

impl ReconcileReport {
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    /// One line per finding, for notices and `huddle doctor`.
    pub fn lines(&self) -> Vec<String> {
        self.findings
            .iter()
            .map(|f| crate::text::sanitize::display(&f.to_string()).into_owned())
            .collect()
    }
}

/// Directories (not links) in `dir`, sorted.
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
        .collect();
    out.sort();
    out
}

/// The repository a worktree folder belongs to (its common git directory's parent, by the
/// one rule huddle's git runner and the sandbox use).
fn repo_of(folder: &Path) -> Option<PathBuf> {
    Layout::repository_of(folder).ok().flatten()
}

/// The branch checked out in a folder, if it is a worktree on a branch.
fn branch_in(folder: &Path) -> Option<String> {
    Git::new(folder)
        .text(&["symbolic-ref", "--quiet", "--short", "HEAD"])
        .ok()
        .filter(|b| !b.is_empty())
}

/// Compares the worktrees `org` records with the folders under `root` (the data dir's
/// worktrees folder) and the `huddle/` branches of the recorded repositories and of `repos`
/// (the repository a front end was opened in). Reports only; deletes nothing. Runs no git at
/// all when nothing is recorded and `root` does not exist. Blocking.
pub fn reconcile(root: &Path, org: &Organization, repos: &[PathBuf]) -> ReconcileReport {
    let mut report = ReconcileReport::default();
    let recorded = distinct(org.sessions.iter().filter_map(|s| s.worktree.as_ref()));
    if recorded.is_empty() && !root.is_dir() {
        return report;
    }
    for w in &recorded {
        if !w.path.is_dir() {
            let sessions = org
                .sessions
                .iter()
                .filter(|s| s.worktree.as_ref().is_some_and(|o| o.path == w.path))
                .map(|s| s.name.clone())
                .collect();
            report.findings.push(Finding::Vanished {
                sessions,
                worktree: w.clone(),
            });
        }
    }
    let mut orphan_branches: Vec<String> = Vec::new();
    let mut scan: Vec<PathBuf> = recorded.iter().map(|w| w.repo.clone()).collect();
    for repo_dir in subdirs(root) {
        for folder in subdirs(&repo_dir) {
            if recorded
                .iter()
                .any(|w| w.path == folder || same_dir(&w.path, &folder))
            {
                continue;
            }
            let branch = branch_in(&folder);
            if let Some(b) = &branch {
                orphan_branches.push(b.clone());
            }
            if let Some(repo) = repo_of(&folder) {
                scan.push(repo);
            }
            report
                .findings
                .push(Finding::OrphanFolder { path: folder, branch });
        }
    }
    for repo in repos {
        if let Ok(top) = Git::new(repo).text(&["rev-parse", "--show-toplevel"]) {
            scan.push(PathBuf::from(top));
        }
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    for repo in scan {
        if seen.iter().any(|s| same_dir(s, &repo)) {
            continue;
        }
        seen.push(repo.clone());
        let prefix = format!("refs/heads/{}", branch_prefix());
        let listed = Git::new(&repo).text(&["for-each-ref", "--format=%(refname:short)", prefix.as_str()]);
        match listed {
            Ok(text) => {
                for branch in text.lines().map(str::trim).filter(|b| !b.is_empty()) {
                    let known = recorded.iter().any(|w| w.branch == branch)
                        || orphan_branches.iter().any(|b| b == branch);
                    if !known {
                        report.findings.push(Finding::OrphanBranch {
                            repo: repo.clone(),
                            branch: branch.to_string(),
                        });
                    }
                }
            }
            Err(WorktreeError::GitMissing) => {
                report
                    .findings
                    .push(Finding::Unchecked(WorktreeError::GitMissing.to_string()));
                break;
            }
            Err(WorktreeError::NoSuchDir(dir)) => report.findings.push(Finding::Unchecked(format!(
                "the repository {} of a team worktree is gone",
                dir.display()
            ))),
            Err(e) => report.findings.push(Finding::Unchecked(e.to_string())),
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::process::Command;

    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-C"])
            .arg(dir)
            .args(args)
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The repository of a worktree folder is read by `Layout`'s rule (where git put the
    /// folder's git directory), not by asking git: with no git to run it is still found, and
    /// a `commondir` file planted in the folder's git directory does not move it.
    #[test]
    fn a_worktree_folders_repository_is_read_from_its_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "first"]);
        let folder = tmp.path().join("worktrees").join("repo").join("dev");
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "huddle/dev",
                folder.to_str().unwrap(),
            ],
        );
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        git(&elsewhere, &["init", "-q"]);
        std::fs::write(
            repo.join(".git/worktrees/dev/commondir"),
            format!("{}\n", elsewhere.join(".git").display()),
        )
        .unwrap();
        let no_git = crate::env::Env::of(BTreeMap::from([("PATH".to_string(), "/nonexistent".to_string())]));
        let found = no_git.scope(|| repo_of(&folder));
        assert_eq!(found, Some(repo.canonicalize().unwrap()));
        assert_eq!(repo_of(&elsewhere), Some(elsewhere.canonicalize().unwrap()));
        assert_eq!(repo_of(tmp.path()), None);
    }
}
