//! What a worktree holds: is it there, which branch it has checked out, its uncommitted
//! changes (`git status --porcelain`) and its commits (ahead of the base, and not yet anywhere
//! else). A few quick git calls per worktree; blocking.

use std::ffi::OsString;

use super::git::{Git, nul_fields};
use super::plan::branch_prefix;
use super::{Worktree, WorktreeError, distinct};
use crate::model::{Organization, SessionId};

/// The state of one worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeStatus {
    pub worktree: Worktree,
    /// Its folder is there.
    pub exists: bool,
    /// Its branch is there.
    pub branch_exists: bool,
    /// The branch checked out in it now (`None`: detached, or the folder is gone). Differs from
    /// the recorded branch when an agent switched branches.
    pub checked_out: Option<String>,
    /// Entries of `git status --porcelain`: changed, staged and untracked files.
    pub changes: usize,
    /// Commits on its branch since the base commit.
    pub ahead: u32,
    /// Commits on its branch that neither the repository's HEAD nor any branch outside
    /// `huddle/` has: work that removing the branch would lose.
    pub unmerged: u32,
}

impl WorktreeStatus {
    /// Uncommitted changes or unmerged commits: removing it would lose work.
    pub fn has_work(&self) -> bool {
        self.changes > 0 || self.unmerged > 0
    }

    /// `2 changed files, 3 commits ahead (3 unmerged)`, `clean`, `gone`.
    pub fn describe(&self) -> String {
        let changes = (self.changes > 0).then(|| counted(self.changes, "uncommitted change"));
        let unmerged = (self.unmerged > 0).then(|| counted(self.unmerged as usize, "unmerged commit"));
        if !self.exists {
            return match unmerged {
                Some(u) => format!("folder gone; its branch has {u}"),
                None => "folder gone".to_string(),
            };
        }
        let mut parts: Vec<String> = changes.into_iter().collect();
        if self.ahead > 0 {
            let merged = if self.unmerged == 0 {
                ", merged".to_string()
            } else if self.unmerged < self.ahead {
                format!(" ({} unmerged)", self.unmerged)
            } else {
                ", unmerged".to_string()
            };
            parts.push(format!(
                "{} ahead{merged}",
                counted(self.ahead as usize, "commit")
            ));
        } else {
            parts.extend(unmerged);
        }
        if let Some(other) = self.checked_out.as_ref().filter(|b| **b != self.worktree.branch) {
            parts.push(format!("on branch {other}"));
        }
        if parts.is_empty() {
            "clean".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// What removing it would lose, for a refusal (`2 uncommitted changes and 1 unmerged commit`).
    pub fn work(&self) -> String {
        let changes = (self.changes > 0).then(|| counted(self.changes, "uncommitted change"));
        let unmerged = (self.unmerged > 0).then(|| counted(self.unmerged as usize, "unmerged commit"));
        changes
            .into_iter()
            .chain(unmerged)
            .collect::<Vec<_>>()
            .join(" and ")
    }
}

/// `1 commit`, `2 commits`.
fn counted(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Entries of `git status --porcelain -z` (a rename's second path is not an entry).
pub(crate) fn count_changes(git: &Git) -> Result<usize, WorktreeError> {
    let out = git.run(&[
        "--no-optional-locks",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=normal",
    ])?;
    let fields = nul_fields(&out.stdout);
    let mut count = 0;
    let mut iter = fields.iter();
    while let Some(entry) = iter.next() {
        count += 1;
        let xy = entry.get(..2).unwrap_or("");
        if xy.contains('R') || xy.contains('C') {
            iter.next();
        }
    }
    Ok(count)
}

/// Commits on `branch` that HEAD and branches outside `huddle/` do not have (after `base`, when
/// known), counted in `repo`. A commit whose change HEAD already has (cherry-picked) is not
/// counted.
pub(crate) fn unmerged_commits(repo: &Git, branch: &str, base: &str) -> Result<u32, WorktreeError> {
    let branch_ref = format!("refs/heads/{branch}");
    let mut args: Vec<OsString> = vec!["rev-list".into(), branch_ref.clone().into()];
    if !base.is_empty() {
        args.push(format!("^{base}").into());
    }
    args.push("--not".into());
    let has_head = repo.check(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])?;
    if has_head {
        args.push("HEAD".into());
    }
    args.push(format!("--exclude={}*", branch_prefix()).into());
    args.push("--branches".into());
    let out = repo.text(&args)?;
    let unreached: Vec<&str> = out.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if unreached.is_empty() || !has_head {
        return Ok(unreached.len() as u32);
    }
    // Of those, the ones whose change is not on HEAD's side either (patch ids).
    let range = format!("HEAD...{branch_ref}");
    let fresh = repo.text(&["rev-list", "--right-only", "--cherry-pick", range.as_str()])?;
    let fresh: Vec<&str> = fresh.lines().map(str::trim).collect();
    Ok(unreached.iter().filter(|c| fresh.contains(c)).count() as u32)
}

/// The state of one worktree (blocking: a few git calls).
pub fn status(wt: &Worktree) -> Result<WorktreeStatus, WorktreeError> {
    let repo = Git::new(&wt.repo);
    let branch_ref = format!("refs/heads/{}", wt.branch);
    let branch_exists = repo.check(&["rev-parse", "--verify", "--quiet", &branch_ref])?;
    let exists = wt.path.is_dir();
    let (checked_out, changes) = if exists {
        let here = Git::new(&wt.path);
        let head = here.output(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
        let checked_out = head
            .status
            .success()
            .then(|| String::from_utf8_lossy(&head.stdout).trim().to_string());
        (checked_out, count_changes(&here)?)
    } else {
        (None, 0)
    };
    let (ahead, unmerged) = if branch_exists {
        let ahead = if wt.base_commit.is_empty() {
            0
        } else {
            repo.text(&[
                "rev-list",
                "--count",
                &format!("{}..{branch_ref}", wt.base_commit),
            ])?
            .trim()
            .parse()
            .unwrap_or(0)
        };
        (ahead, unmerged_commits(&repo, &wt.branch, &wt.base_commit)?)
    } else {
        (0, 0)
    };
    Ok(WorktreeStatus {
        worktree: wt.clone(),
        exists,
        branch_exists,
        checked_out,
        changes,
        ahead,
        unmerged,
    })
}

/// One session's worktree and its state.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionWorktree {
    pub session_id: SessionId,
    pub session: String,
    pub group_id: String,
    pub worktree: Worktree,
    /// Shared by every session of the same worktree (computed once).
    pub status: Result<WorktreeStatus, WorktreeError>,
}

/// Every session with a worktree (of `group_id`, or of the whole organization) and its state:
/// what the sidebar shows (branch, changes, commits ahead). Each worktree is looked at once.
/// Blocking: call it from `spawn_blocking` with a snapshot of the organization.
pub fn session_statuses(org: &Organization, group_id: Option<&str>) -> Vec<SessionWorktree> {
    let sessions: Vec<_> = org
        .sessions
        .iter()
        .filter(|s| group_id.is_none_or(|g| s.group_id == g))
        .filter_map(|s| s.worktree.as_ref().map(|w| (s, w)))
        .collect();
    let states: Vec<(Worktree, Result<WorktreeStatus, WorktreeError>)> =
        distinct(sessions.iter().map(|(_, w)| *w))
            .into_iter()
            .map(|w| {
                let state = status(&w);
                (w, state)
            })
            .collect();
    sessions
        .into_iter()
        .map(|(s, w)| SessionWorktree {
            session_id: s.id.clone(),
            session: s.name.clone(),
            group_id: s.group_id.clone(),
            worktree: w.clone(),
            status: states
                .iter()
                .find(|(known, _)| known.path == w.path)
                .map(|(_, st)| st.clone())
                .unwrap_or_else(|| Err(WorktreeError::Refused("not looked at".into()))),
        })
        .collect()
}
