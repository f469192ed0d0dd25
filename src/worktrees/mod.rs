//! Team worktrees (issue 11): real `git worktree add` on new branches, per the team's
//! [`WorktreeStrategy`], under the data dir's `worktrees/<repo-slug>/`; their state (branch,
//! changes, commits ahead), review (diff against the base commit), bringing work back (merge or
//! cherry-pick, aborted whole on a conflict), removal that never loses work, and reconciling
//! what is on disk with what `organization.json` records.
//!
//! Every function here runs git and is **blocking**: front ends call them off the UI thread
//! (`tokio::task::spawn_blocking`). Git runs without a shell, with explicit arguments,
//! `GIT_TERMINAL_PROMPT=0` and stdin closed (see [`git`]). Paths are always made by huddle
//! (slugs of names, under the data dir); a recorded path outside the data dir's worktrees folder
//! or a branch outside `huddle/` is never removed.

mod create;
mod diff;
mod error;
pub(crate) mod git;
mod merge;
mod plan;
mod reconcile;
mod remove;
mod status;

use std::path::{Path, PathBuf};

pub use crate::model::{Worktree, WorktreeStrategy};
pub use create::{RepoHead, create_worktrees, discard_created, repo_head};
pub use diff::{ChangeKind, FileChange, PATCH_MAX_BYTES, WorktreeDiff, diff};
pub use error::WorktreeError;
pub use merge::{Commit, MergeMethod, MergeOutcome, MergePlan, merge, merge_plan};
pub use plan::{PlannedWorktree, branch_prefix, plan_team, random_suffix, repo_slug};
pub use reconcile::{Finding, ReconcileReport, reconcile};
pub use remove::{Removed, orphan, remove};
pub use status::{SessionWorktree, WorktreeStatus, session_statuses, status};

/// The worktrees of a set of sessions, each once (sessions that share one carry equal records),
/// in the order first seen.
pub fn distinct<'a>(records: impl IntoIterator<Item = &'a Worktree>) -> Vec<Worktree> {
    let mut out: Vec<Worktree> = Vec::new();
    for w in records {
        if !out.iter().any(|o| o.path == w.path) {
            out.push(w.clone());
        }
    }
    out
}

/// True when `path` is inside `root` (lexically: no `..`, both absolute). Used before removing
/// anything, so that a hand-edited record can never point huddle at a directory it did not make.
pub fn is_under(root: &Path, path: &Path) -> bool {
    path.is_absolute()
        && root.is_absolute()
        && path.strip_prefix(root).is_ok_and(crate::model::is_plain_relative)
}

/// The folder a repository's worktrees live in, under `root` (the data dir's `worktrees/`).
pub fn repo_dir(root: &Path, repo_toplevel: &Path) -> PathBuf {
    root.join(repo_slug(repo_toplevel))
}
