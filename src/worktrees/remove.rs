//! Removing a worktree and its branch without losing work: a worktree with uncommitted changes
//! or with commits no other branch has is only removed when forced. Only what huddle made is
//! ever removed: a folder inside the data dir's worktrees folder that git lists as a worktree
//! of the recorded repository, and a branch under `huddle/`.

use std::path::{Path, PathBuf};

use super::git::{Git, Layout, nul_fields};
use super::plan::branch_prefix;
use super::status::status;
use super::{Worktree, WorktreeError, is_under};

/// What a removal did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Removed {
    pub worktree: Worktree,
    /// The folder was removed (`git worktree remove`); false when it was gone already.
    pub folder_removed: bool,
    /// The branch was deleted; false when it was gone already.
    pub branch_deleted: bool,
    /// The work a forced removal threw away (`2 uncommitted changes and 1 unmerged commit`).
    pub discarded: Option<String>,
}

/// The worktrees git knows of in `repo` (`git worktree list`), as absolute paths.
pub(crate) fn registered(repo: &Git) -> Result<Vec<PathBuf>, WorktreeError> {
    let out = repo.run(&["worktree", "list", "--porcelain", "-z"])?;
    Ok(nul_fields(&out.stdout)
        .into_iter()
        .filter_map(|f| f.strip_prefix("worktree ").map(PathBuf::from))
        .collect())
}

/// The same directory, whichever way it is spelled (links resolved when it exists).
pub(crate) fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Checks that huddle made this worktree: its branch is under `huddle/` and its folder inside
/// `root` (the data dir's worktrees folder).
pub(crate) fn check_ours(root: &Path, wt: &Worktree) -> Result<(), WorktreeError> {
    let branch_ok = wt
        .branch
        .strip_prefix(branch_prefix())
        .is_some_and(|rest| !rest.is_empty() && !rest.contains("..") && !rest.starts_with('-'));
    if !branch_ok {
        return Err(WorktreeError::Refused(format!(
            "{} is not a branch huddle made (huddle/…); huddle only removes its own",
            wt.branch
        )));
    }
    let root = std::path::absolute(root).map_err(|e| WorktreeError::io("resolve", root, &e))?;
    if !is_under(&root, &wt.path) {
        return Err(WorktreeError::Refused(format!(
            "{} is not inside huddle's worktrees folder {}; huddle only removes worktrees it made",
            wt.path.display(),
            root.display()
        )));
    }
    Ok(())
}

/// Removes the worktree and deletes its branch. Without `force`, a worktree with uncommitted
/// changes or unmerged commits is left alone ([`WorktreeError::HasWork`]); a folder that is
/// gone (removed by hand) only has its registration pruned and its branch deleted (if that
/// holds nothing unmerged). `root` is the data dir's worktrees folder. Blocking.
pub fn remove(root: &Path, wt: &Worktree, force: bool) -> Result<Removed, WorktreeError> {
    check_ours(root, wt)?;
    let state = status(wt)?;
    let discarded = state.has_work().then(|| state.work());
    if let Some(what) = &discarded
        && !force
    {
        return Err(WorktreeError::HasWork {
            path: wt.path.clone(),
            what: what.clone(),
        });
    }
    let repo = Git::new(&wt.repo);
    let mut folder_removed = false;
    if state.exists {
        if !registered(&repo)?.iter().any(|p| same_dir(p, &wt.path)) {
            return Err(WorktreeError::Refused(format!(
                "{} is not a worktree of {} (`git worktree list` does not show it); it was left alone",
                wt.path.display(),
                wt.repo.display()
            )));
        }
        let path = wt.path.as_os_str().to_os_string();
        let mut args: Vec<std::ffi::OsString> = vec!["worktree".into(), "remove".into()];
        if force {
            // Twice: also a locked worktree.
            args.extend(["--force".into(), "--force".into()]);
        }
        args.push(path);
        repo.run(&args)?;
        folder_removed = true;
    } else {
        repo.run(&["worktree", "prune"])?;
    }
    let mut branch_deleted = false;
    if state.branch_exists {
        repo.run(&["branch", "-D", "--", &wt.branch])?;
        branch_deleted = true;
    }
    tracing::info!(path = %wt.path.display(), branch = %wt.branch, forced = discarded.is_some(), "worktree removed");
    Ok(Removed {
        worktree: wt.clone(),
        folder_removed,
        branch_deleted,
        discarded,
    })
}

/// The record of a worktree folder no session records (an orphan reconciling reported, or one
/// kept when its team was deleted), read from git: its branch and repository. Its base is
/// unknown, so every commit of its branch that no other branch has counts as unmerged (and a
/// diff compares with where it forked). Only folders inside `root`.
pub fn orphan(root: &Path, path: &Path) -> Result<Worktree, WorktreeError> {
    if !path.is_dir() {
        return Err(WorktreeError::NoSuchDir(path.to_path_buf()));
    }
    let root_abs = std::path::absolute(root).map_err(|e| WorktreeError::io("resolve", root, &e))?;
    if !is_under(&root_abs, path) {
        return Err(WorktreeError::Refused(format!(
            "{} is not inside huddle's worktrees folder {}; huddle only handles worktrees it made",
            path.display(),
            root_abs.display()
        )));
    }
    let here = Git::new(path);
    let branch = here.output(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
    let branch = String::from_utf8_lossy(&branch.stdout).trim().to_string();
    if branch.is_empty() {
        return Err(WorktreeError::Refused(format!(
            "{} has no branch checked out; look at it with git and remove it yourself",
            path.display()
        )));
    }
    let repo = Layout::repository_of(path)?.ok_or_else(|| WorktreeError::NotARepo(path.to_path_buf()))?;
    Ok(Worktree {
        path: path.to_path_buf(),
        branch,
        base_commit: String::new(),
        repo,
        subdir: None,
    })
}
