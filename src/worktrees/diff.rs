//! Reviewing a worktree: what changed since its base commit, committed or not, as a list of
//! files and the patch text (`git diff <base>`, plus new files git does not track yet).

use std::ffi::OsString;
use std::path::Path;

use super::git::{Git, nul_fields};
use super::{Worktree, WorktreeError};

/// Patch text kept per worktree; the rest is cut (and the cut said).
pub const PATCH_MAX_BYTES: usize = 4 * 1024 * 1024;

/// How a file changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    Renamed {
        from: String,
    },
    Copied {
        from: String,
    },
    /// A file became a link, or the other way round.
    TypeChanged,
    /// A new file git does not track yet (not added).
    Untracked,
    Other(String),
}

impl ChangeKind {
    /// One letter, as `git status --short` writes it (`?` for untracked).
    pub fn letter(&self) -> char {
        match self {
            ChangeKind::Added => 'A',
            ChangeKind::Modified => 'M',
            ChangeKind::Deleted => 'D',
            ChangeKind::Renamed { .. } => 'R',
            ChangeKind::Copied { .. } => 'C',
            ChangeKind::TypeChanged => 'T',
            ChangeKind::Untracked => '?',
            ChangeKind::Other(_) => 'X',
        }
    }
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Relative to the worktree's top.
    pub path: String,
    pub kind: ChangeKind,
}

/// A worktree against its base commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeDiff {
    pub worktree: Worktree,
    pub files: Vec<FileChange>,
    /// The patch, at most [`PATCH_MAX_BYTES`] (cut on a line boundary).
    pub patch: String,
    pub truncated: bool,
    /// Untracked entries left out of the patch (not regular files: links, FIFOs, devices).
    pub skipped: Vec<String>,
    /// The commit compared against: the recorded base, or for a worktree no session records
    /// the point where its branch forked from the repository's current branch.
    pub base: String,
}

fn parse_name_status(fields: &[String]) -> Vec<FileChange> {
    let mut out = Vec::new();
    let mut iter = fields.iter();
    while let Some(status) = iter.next() {
        let letter = status.chars().next().unwrap_or('X');
        let kind = match letter {
            'A' => ChangeKind::Added,
            'M' => ChangeKind::Modified,
            'D' => ChangeKind::Deleted,
            'T' => ChangeKind::TypeChanged,
            'R' | 'C' => {
                let from = iter.next().cloned().unwrap_or_default();
                if letter == 'R' {
                    ChangeKind::Renamed { from }
                } else {
                    ChangeKind::Copied { from }
                }
            }
            _ => ChangeKind::Other(status.clone()),
        };
        let Some(path) = iter.next() else { break };
        out.push(FileChange {
            path: path.clone(),
            kind,
        });
    }
    out
}

/// Appends `more` to `patch` within the cap; true when something had to be cut.
fn append_capped(patch: &mut String, more: &str) -> bool {
    let room = PATCH_MAX_BYTES.saturating_sub(patch.len());
    if more.len() <= room {
        patch.push_str(more);
        return false;
    }
    let mut cut = room;
    while cut > 0 && !more.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = more[..cut].rfind('\n').map_or(0, |i| i + 1);
    patch.push_str(&more[..cut]);
    true
}

/// True for a regular file (links are not followed: a link's diff is its target's name).
fn is_plain_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() || m.file_type().is_symlink())
}

/// The worktree against its base commit: committed and uncommitted changes, and new files not
/// yet added. Blocking.
pub fn diff(wt: &Worktree) -> Result<WorktreeDiff, WorktreeError> {
    if !wt.path.is_dir() {
        return Err(WorktreeError::Refused(format!(
            "the worktree {} is gone (removed by hand?); nothing to compare",
            wt.path.display()
        )));
    }
    let git = Git::new(&wt.path);
    // A worktree kept without its record (its team deleted) has no recorded base: where its
    // branch forked from the repository's current branch stands in.
    let base = if wt.base_commit.is_empty() {
        Git::new(&wt.repo).text(&["merge-base", "HEAD", &format!("refs/heads/{}", wt.branch)])?
    } else {
        wt.base_commit.clone()
    };
    let base_arg = base.as_str();
    let names = git.run(&[
        "diff",
        "--name-status",
        "-z",
        "-M",
        "--no-ext-diff",
        base_arg,
        "--",
    ])?;
    let mut files = parse_name_status(&nul_fields(&names.stdout));
    let untracked = git.run(&["ls-files", "--others", "--exclude-standard", "-z"])?;
    let untracked = nul_fields(&untracked.stdout);

    let patch_out = git.run(&[
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "-M",
        base_arg,
        "--",
    ])?;
    let mut patch = String::new();
    let mut truncated = append_capped(&mut patch, &String::from_utf8_lossy(&patch_out.stdout));
    let mut skipped = Vec::new();
    for name in untracked {
        files.push(FileChange {
            path: name.clone(),
            kind: ChangeKind::Untracked,
        });
        if truncated {
            continue;
        }
        // Only regular files (and links, shown as such) are given to git: a FIFO would block.
        if !is_plain_file(&wt.path.join(&name)) {
            skipped.push(name);
            continue;
        }
        let args: Vec<OsString> = vec![
            "diff".into(),
            "--no-color".into(),
            "--no-ext-diff".into(),
            "--no-textconv".into(),
            "--no-index".into(),
            "--".into(),
            "/dev/null".into(),
            name.clone().into(),
        ];
        let out = git.output(&args)?;
        // `--no-index` exits 1 when the files differ, which they do.
        if out.status.code() != Some(1) && !out.status.success() {
            return Err(git.failure(&args, &out));
        }
        truncated |= append_capped(&mut patch, &String::from_utf8_lossy(&out.stdout));
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(WorktreeDiff {
        worktree: wt.clone(),
        files,
        patch,
        truncated,
        skipped,
        base,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_status_fields_become_changes() {
        let fields: Vec<String> = ["M", "a.rs", "R100", "old.rs", "new.rs", "A", "b.rs", "D", "c"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let changes = parse_name_status(&fields);
        assert_eq!(changes.len(), 4);
        assert_eq!(changes[1].path, "new.rs");
        assert_eq!(
            changes[1].kind,
            ChangeKind::Renamed {
                from: "old.rs".into()
            }
        );
        assert_eq!(changes[3].kind.letter(), 'D');
    }

    #[test]
    fn the_patch_is_cut_on_a_line_boundary() {
        let mut patch = "x".repeat(PATCH_MAX_BYTES - 5);
        let more = "line one\nline two\n";
        assert!(append_capped(&mut patch, more));
        assert!(patch.ends_with('x'), "nothing of a line that does not fit");
        let mut small = String::new();
        assert!(!append_capped(&mut small, more));
        assert_eq!(small, more);
    }
}
