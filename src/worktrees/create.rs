//! Making a team's worktrees: `git worktree add -b <branch> <path> <HEAD commit>` for each
//! planned one, all or nothing.

use std::path::{Path, PathBuf};

use super::git::Git;
use super::plan::{PlannedWorktree, random_suffix};
use super::{Worktree, WorktreeError};
use crate::model::is_plain_relative;

/// A repository as worktrees are made from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoHead {
    /// The repository's top directory.
    pub toplevel: PathBuf,
    /// The commit HEAD points at: the base of new worktrees.
    pub commit: String,
    /// The current branch, `None` on a detached HEAD (allowed: the base is HEAD's commit).
    pub branch: Option<String>,
    /// Where the asked directory is inside the repository (relative), `None` at the top.
    pub prefix: Option<PathBuf>,
}

/// The repository `dir` is in and its HEAD. Clear errors for a missing directory, a directory
/// outside any repository, a repository without a commit, and a missing `git`.
pub fn repo_head(dir: &Path) -> Result<RepoHead, WorktreeError> {
    if !dir.is_dir() {
        return Err(WorktreeError::NoSuchDir(dir.to_path_buf()));
    }
    let git = Git::new(dir);
    let top = git.output(&["rev-parse", "--show-toplevel"])?;
    let toplevel = String::from_utf8_lossy(&top.stdout).trim_end().to_string();
    if !top.status.success() || toplevel.is_empty() {
        return Err(WorktreeError::NotARepo(dir.to_path_buf()));
    }
    let toplevel = PathBuf::from(toplevel);
    let prefix = git.text(&["rev-parse", "--show-prefix"])?;
    let prefix = Some(PathBuf::from(prefix.trim_end_matches('/'))).filter(|p| is_plain_relative(p));
    if !git.check(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])? {
        return Err(WorktreeError::NoCommits(toplevel));
    }
    let commit = git.text(&["rev-parse", "--verify", "HEAD^{commit}"])?;
    let branch = git.output(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
    let branch = branch
        .status
        .success()
        .then(|| String::from_utf8_lossy(&branch.stdout).trim().to_string())
        .filter(|b| !b.is_empty());
    Ok(RepoHead {
        toplevel,
        commit,
        branch,
        prefix,
    })
}

/// True when the branch exists in the repository.
fn branch_exists(git: &Git, branch: &str) -> Result<bool, WorktreeError> {
    git.check(&[
        "rev-parse",
        "--verify",
        "--quiet",
        &format!("refs/heads/{branch}"),
    ])
}

/// Makes every planned worktree from `head` (in order) and returns their records, or makes
/// none: a failure removes the ones already made (they hold nothing yet). A name already taken
/// (a folder or a branch) gets a new random suffix.
pub fn create_worktrees(head: &RepoHead, plan: &[PlannedWorktree]) -> Result<Vec<Worktree>, WorktreeError> {
    let git = Git::new(&head.toplevel);
    let mut made: Vec<Worktree> = Vec::new();
    for planned in plan {
        match create_one(&git, head, planned) {
            Ok(w) => made.push(w),
            Err(e) => {
                discard_created(&made);
                return Err(e);
            }
        }
    }
    Ok(made)
}

fn create_one(git: &Git, head: &RepoHead, planned: &PlannedWorktree) -> Result<Worktree, WorktreeError> {
    let path =
        std::path::absolute(&planned.path).map_err(|e| WorktreeError::io("resolve", &planned.path, &e))?;
    let parent = path
        .parent()
        .ok_or_else(|| WorktreeError::Refused(format!("{} has no parent folder", path.display())))?
        .to_path_buf();
    crate::store::create_private_dir(&parent).map_err(|e| WorktreeError::io("create", &parent, &e))?;
    let (mut path, mut branch) = (path, planned.branch.clone());
    let mut tries = 0;
    while path.exists() || branch_exists(git, &branch)? {
        tries += 1;
        if tries > 16 {
            return Err(WorktreeError::Refused(format!(
                "cannot find a free name for a worktree like {}",
                planned.path.display()
            )));
        }
        let stem = branch
            .rsplit_once('-')
            .map_or(branch.as_str(), |(stem, _)| stem)
            .to_string();
        branch = format!("{stem}-{}", random_suffix());
        path = parent.join(branch.rsplit('/').next().unwrap_or(&branch));
    }
    let path_arg = path.as_os_str().to_os_string();
    git.run(&[
        std::ffi::OsStr::new("worktree"),
        "add".as_ref(),
        "--quiet".as_ref(),
        "-b".as_ref(),
        branch.as_ref(),
        path_arg.as_os_str(),
        head.commit.as_ref(),
    ])?;
    tracing::info!(path = %path.display(), branch = %branch, "worktree made");
    Ok(Worktree {
        path,
        branch,
        base_commit: head.commit.clone(),
        repo: head.toplevel.clone(),
        subdir: head.prefix.clone(),
    })
}

/// Removes worktrees just made (a failed team creation): they hold nothing, so they go with
/// `--force` and their branches with them. Failures are logged (reconciling reports leftovers).
pub fn discard_created(made: &[Worktree]) {
    for w in made {
        let git = Git::new(&w.repo);
        let path = w.path.as_os_str();
        if let Err(e) = git.run(&["worktree".as_ref(), "remove".as_ref(), "--force".as_ref(), path]) {
            tracing::warn!(path = %w.path.display(), error = %e, "cannot remove a worktree made for a team that failed");
        }
        if let Err(e) = git.run(&["branch", "-D", &w.branch]) {
            tracing::warn!(branch = %w.branch, error = %e, "cannot delete a branch made for a team that failed");
        }
    }
}
