//! What can go wrong with worktrees, in words a person can act on.

use std::path::PathBuf;

/// Why a worktree operation did not happen (or was undone).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorktreeError {
    #[error("git is not installed or not on PATH; huddle needs it for team worktrees")]
    GitMissing,
    #[error("cannot run git: {0}")]
    GitUnusable(String),
    #[error("{} is not inside a git repository (run `git init` there, or create the team with worktrees: shared)", .0.display())]
    NotARepo(PathBuf),
    #[error("{} does not exist", .0.display())]
    NoSuchDir(PathBuf),
    #[error("the repository {} has no commit yet: make a first commit, then create the team", .0.display())]
    NoCommits(PathBuf),
    /// A git command failed; `message` is the end of its stderr.
    #[error("`{command}` failed in {}: {message}", .dir.display())]
    Git {
        command: String,
        dir: PathBuf,
        message: String,
    },
    #[error("cannot {action} {}: {message}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        message: String,
    },
    /// Removing would lose work: uncommitted changes or commits no other branch has.
    #[error("{} has {what}; nothing was removed (force the removal to throw this work away)", .path.display())]
    HasWork { path: PathBuf, what: String },
    /// A merge or cherry-pick met a conflict and was aborted: the repository is as it was.
    #[error(
        "{method} of {branch} into {into} stopped on a conflict in {files}; it was aborted and the repository is exactly as before",
        files = if .files.is_empty() { "some files".to_string() } else { .files.join(", ") }
    )]
    Conflict {
        method: &'static str,
        branch: String,
        into: String,
        files: Vec<String>,
    },
    /// A merge or cherry-pick failed and could not be undone: the repository needs a look.
    #[error("{0}")]
    NotRestored(String),
    /// Refused before anything was changed; the message says why and what to do.
    #[error("{0}")]
    Refused(String),
}

impl WorktreeError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, e: &std::io::Error) -> WorktreeError {
        WorktreeError::Io {
            action,
            path: path.into(),
            message: e.to_string(),
        }
    }
}
